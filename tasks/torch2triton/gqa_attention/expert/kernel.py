"""Grouped-query attention forward in Triton: FlashAttention-style, one fused kernel.

Each program owns BLOCK_M query rows of one (batch, query head) and streams the keys and values
of the matching key/value head (h // group: no repeat_interleave copies) past them in BLOCK_N
blocks, with the online softmax in float32 (running maximum, running sum, rescaled accumulator,
exp2 with log2(e) folded into the scale). The seq x seq scores never reach memory; the eager
reference materializes them in the inputs' dtype, again in float32 for the softmax, and once
more as probabilities. Causal programs stop at their diagonal and only the diagonal blocks pay
for the mask; the key loop is software-pipelined (num_stages = 3).
"""

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634


@triton.jit
def _attend(
    acc, l_i, m_i, q, k_base, v_base, rm, rd, seq, head_dim, qk_scale, start, end,
    DIAGONAL: tl.constexpr, BLOCK_N: tl.constexpr,
):
    for start_n in range(start, end, BLOCK_N):
        rn = start_n + tl.arange(0, BLOCK_N)
        kt = tl.load(
            k_base + rn[None, :] * head_dim + rd[:, None],
            mask=(rn[None, :] < seq) & (rd[:, None] < head_dim), other=0.0,
        )
        s = tl.dot(q, kt) * qk_scale
        keep = rn[None, :] < seq
        if DIAGONAL:
            keep = keep & (rm[:, None] >= rn[None, :])
        s = tl.where(keep, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(
            v_base + rn[:, None] * head_dim + rd[None, :],
            mask=(rn[:, None] < seq) & (rd[None, :] < head_dim), other=0.0,
        )
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def gqa_forward_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr, q_heads, group, seq, head_dim, qk_scale,
    CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)  # (batch, query head)
    b = bh // q_heads
    kv = b * (q_heads // group) + (bh % q_heads) // group
    q_base = bh * seq * head_dim
    kv_base = kv * seq * head_dim
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rd = tl.arange(0, BLOCK_D)
    q = tl.load(
        q_ptr + q_base + rm[:, None] * head_dim + rd[None, :],
        mask=(rm[:, None] < seq) & (rd[None, :] < head_dim), other=0.0,
    )
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    k_base = k_ptr + kv_base
    v_base = v_ptr + kv_base
    if CAUSAL:
        diag = pid_m * BLOCK_M
        acc, l_i, m_i = _attend(
            acc, l_i, m_i, q, k_base, v_base, rm, rd, seq, head_dim, qk_scale,
            0, diag, False, BLOCK_N,
        )
        acc, l_i, m_i = _attend(
            acc, l_i, m_i, q, k_base, v_base, rm, rd, seq, head_dim, qk_scale,
            diag, tl.minimum(diag + BLOCK_M, seq), True, BLOCK_N,
        )
    else:
        acc, l_i, m_i = _attend(
            acc, l_i, m_i, q, k_base, v_base, rm, rd, seq, head_dim, qk_scale,
            0, seq, False, BLOCK_N,
        )
    o = acc / l_i[:, None]
    tl.store(
        o_ptr + q_base + rm[:, None] * head_dim + rd[None, :],
        o.to(o_ptr.dtype.element_ty),
        mask=(rm[:, None] < seq) & (rd[None, :] < head_dim),
    )


def gqa_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    """Grouped-query attention over contiguous (batch, heads, seq, head_dim) tensors."""
    batch, q_heads, seq, head_dim = q.shape
    group = q_heads // k.shape[1]
    o = torch.empty_like(q)
    block_d = max(16, triton.next_power_of_2(head_dim))
    num_warps = 8 if block_d >= 128 else 4
    grid = (triton.cdiv(seq, 128), batch * q_heads)
    gqa_forward_kernel[grid](
        q, k, v, o, q_heads, group, seq, head_dim, head_dim ** -0.5 * LOG2E, CAUSAL=causal,
        BLOCK_M=128, BLOCK_N=64, BLOCK_D=block_d, num_warps=num_warps, num_stages=3,
    )
    return o
