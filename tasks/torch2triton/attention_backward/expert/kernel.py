"""Attention forward and backward in Triton: FlashAttention-2 style, no seq x seq tensors.

Forward: each program streams keys and values past BLOCK_M query rows with the online softmax
(float32, exp2 with log2(e) folded into the scale, diagonal-only masking when causal) and keeps
each row's base-2 logsumexp for the backward.
Backward, three kernels and no atomics (bitwise reproducible):
1. delta_kernel: delta = rowsum(o * do) in float32;
2. dkdv_kernel: each program owns BLOCK_N keys, walks the query blocks that see them,
   recomputes P = exp2(S - lse) on chip and accumulates dv += P^T do and
   dk += (P * (do v^T - delta))^T q;
3. dq_kernel: each program owns BLOCK_M queries and accumulates dq over the key blocks.
Eager autograd materializes the scores, probabilities and their gradients (several
batch x heads x seq x seq tensors) and moves each through memory more than once.
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
def forward_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr, lse_ptr, seq, head_dim, qk_scale,
    CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    base = bh * seq * head_dim
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rd = tl.arange(0, BLOCK_D)
    q = tl.load(
        q_ptr + base + rm[:, None] * head_dim + rd[None, :],
        mask=(rm[:, None] < seq) & (rd[None, :] < head_dim), other=0.0,
    )
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    if CAUSAL:
        diag = pid_m * BLOCK_M
        acc, l_i, m_i = _attend(
            acc, l_i, m_i, q, k_ptr + base, v_ptr + base, rm, rd, seq, head_dim, qk_scale,
            0, diag, False, BLOCK_N,
        )
        acc, l_i, m_i = _attend(
            acc, l_i, m_i, q, k_ptr + base, v_ptr + base, rm, rd, seq, head_dim, qk_scale,
            diag, tl.minimum(diag + BLOCK_M, seq), True, BLOCK_N,
        )
    else:
        acc, l_i, m_i = _attend(
            acc, l_i, m_i, q, k_ptr + base, v_ptr + base, rm, rd, seq, head_dim, qk_scale,
            0, seq, False, BLOCK_N,
        )
    o = acc / l_i[:, None]
    tl.store(
        o_ptr + base + rm[:, None] * head_dim + rd[None, :], o.to(o_ptr.dtype.element_ty),
        mask=(rm[:, None] < seq) & (rd[None, :] < head_dim),
    )
    tl.store(lse_ptr + bh * seq + rm, m_i + tl.log2(l_i), mask=rm < seq)


@triton.jit
def delta_kernel(o_ptr, do_ptr, delta_ptr, seq, head_dim, BLOCK_M: tl.constexpr, BLOCK_D: tl.constexpr):
    bh = tl.program_id(1).to(tl.int64)
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rd = tl.arange(0, BLOCK_D)
    mask = (rm[:, None] < seq) & (rd[None, :] < head_dim)
    offs = bh * seq * head_dim + rm[:, None] * head_dim + rd[None, :]
    o = tl.load(o_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    do = tl.load(do_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(delta_ptr + bh * seq + rm, tl.sum(o * do, axis=1), mask=rm < seq)


@triton.jit
def dkdv_kernel(
    q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dk_ptr, dv_ptr, seq, head_dim,
    sm_scale, qk_scale, CAUSAL: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):
    bh = tl.program_id(1).to(tl.int64)
    base = bh * seq * head_dim
    start_n = tl.program_id(0) * BLOCK_N
    rn = start_n + tl.arange(0, BLOCK_N)
    rd = tl.arange(0, BLOCK_D)
    kv_mask = (rn[:, None] < seq) & (rd[None, :] < head_dim)
    k = tl.load(k_ptr + base + rn[:, None] * head_dim + rd[None, :], mask=kv_mask, other=0.0)
    v = tl.load(v_ptr + base + rn[:, None] * head_dim + rd[None, :], mask=kv_mask, other=0.0)
    dk = tl.zeros([BLOCK_N, BLOCK_D], dtype=tl.float32)
    dv = tl.zeros([BLOCK_N, BLOCK_D], dtype=tl.float32)
    lo = (start_n // BLOCK_M) * BLOCK_M if CAUSAL else 0
    for start_m in range(lo, seq, BLOCK_M):
        rm = start_m + tl.arange(0, BLOCK_M)
        q_mask = (rm[:, None] < seq) & (rd[None, :] < head_dim)
        q = tl.load(q_ptr + base + rm[:, None] * head_dim + rd[None, :], mask=q_mask, other=0.0)
        do = tl.load(do_ptr + base + rm[:, None] * head_dim + rd[None, :], mask=q_mask, other=0.0)
        lse = tl.load(lse_ptr + bh * seq + rm, mask=rm < seq, other=0.0)
        delta = tl.load(delta_ptr + bh * seq + rm, mask=rm < seq, other=0.0)
        s_t = tl.dot(k, tl.trans(q)) * qk_scale  # [BLOCK_N, BLOCK_M]
        keep = (rm[None, :] < seq) & (rn[:, None] < seq)
        if CAUSAL:
            keep = keep & (rm[None, :] >= rn[:, None])
        p_t = tl.where(keep, tl.exp2(s_t - lse[None, :]), 0.0)
        dv = tl.dot(p_t.to(do.dtype), do, dv)
        dp_t = tl.dot(v, tl.trans(do))
        ds_t = p_t * (dp_t - delta[None, :])
        dk = tl.dot(ds_t.to(q.dtype), q, dk)
    dk = dk * sm_scale
    tl.store(dk_ptr + base + rn[:, None] * head_dim + rd[None, :], dk.to(dk_ptr.dtype.element_ty), mask=kv_mask)
    tl.store(dv_ptr + base + rn[:, None] * head_dim + rd[None, :], dv.to(dv_ptr.dtype.element_ty), mask=kv_mask)


@triton.jit
def dq_kernel(
    q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, dq_ptr, seq, head_dim,
    sm_scale, qk_scale, CAUSAL: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):
    bh = tl.program_id(1).to(tl.int64)
    base = bh * seq * head_dim
    start_m = tl.program_id(0) * BLOCK_M
    rm = start_m + tl.arange(0, BLOCK_M)
    rd = tl.arange(0, BLOCK_D)
    q_mask = (rm[:, None] < seq) & (rd[None, :] < head_dim)
    q = tl.load(q_ptr + base + rm[:, None] * head_dim + rd[None, :], mask=q_mask, other=0.0)
    do = tl.load(do_ptr + base + rm[:, None] * head_dim + rd[None, :], mask=q_mask, other=0.0)
    lse = tl.load(lse_ptr + bh * seq + rm, mask=rm < seq, other=0.0)
    delta = tl.load(delta_ptr + bh * seq + rm, mask=rm < seq, other=0.0)
    dq = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    hi = tl.minimum(start_m + BLOCK_M, seq) if CAUSAL else seq
    for start_n in range(0, hi, BLOCK_N):
        rn = start_n + tl.arange(0, BLOCK_N)
        kv_mask = (rn[:, None] < seq) & (rd[None, :] < head_dim)
        k = tl.load(k_ptr + base + rn[:, None] * head_dim + rd[None, :], mask=kv_mask, other=0.0)
        v = tl.load(v_ptr + base + rn[:, None] * head_dim + rd[None, :], mask=kv_mask, other=0.0)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        keep = (rm[:, None] < seq) & (rn[None, :] < seq)
        if CAUSAL:
            keep = keep & (rm[:, None] >= rn[None, :])
        p = tl.where(keep, tl.exp2(s - lse[:, None]), 0.0)
        dp = tl.dot(do, tl.trans(v))
        ds = p * (dp - delta[:, None])
        dq = tl.dot(ds.to(k.dtype), k, dq)
    dq = dq * sm_scale
    tl.store(dq_ptr + base + rm[:, None] * head_dim + rd[None, :], dq.to(dq_ptr.dtype.element_ty), mask=q_mask)


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
        batch, heads, seq, head_dim = q.shape
        o = torch.empty_like(q)
        lse = torch.empty((batch * heads, seq), dtype=torch.float32, device=q.device)
        block_d = max(16, triton.next_power_of_2(head_dim))
        forward_kernel[(triton.cdiv(seq, 128), batch * heads)](
            q, k, v, o, lse, seq, head_dim, head_dim ** -0.5 * LOG2E, CAUSAL=causal,
            BLOCK_M=128, BLOCK_N=64, BLOCK_D=block_d,
            num_warps=8 if block_d >= 128 else 4, num_stages=3,
        )
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.causal = causal
        return o

    @staticmethod
    def backward(ctx, do: torch.Tensor):
        q, k, v, o, lse = ctx.saved_tensors
        causal = ctx.causal
        do = do.contiguous()
        batch, heads, seq, head_dim = q.shape
        bh = batch * heads
        block_d = max(16, triton.next_power_of_2(head_dim))
        sm_scale = head_dim ** -0.5
        delta = torch.empty((bh, seq), dtype=torch.float32, device=q.device)
        delta_kernel[(triton.cdiv(seq, 64), bh)](
            o, do, delta, seq, head_dim, BLOCK_M=64, BLOCK_D=block_d, num_warps=4,
        )
        dq = torch.empty_like(q)
        dk = torch.empty_like(k)
        dv = torch.empty_like(v)
        warps = 8 if block_d >= 128 else 4
        dkdv_kernel[(triton.cdiv(seq, 128), bh)](
            q, k, v, do, lse, delta, dk, dv, seq, head_dim, sm_scale, sm_scale * LOG2E,
            CAUSAL=causal, BLOCK_M=32, BLOCK_N=128, BLOCK_D=block_d, num_warps=warps, num_stages=3,
        )
        dq_kernel[(triton.cdiv(seq, 128), bh)](
            q, k, v, do, lse, delta, dq, seq, head_dim, sm_scale, sm_scale * LOG2E,
            CAUSAL=causal, BLOCK_M=128, BLOCK_N=32, BLOCK_D=block_d, num_warps=warps, num_stages=3,
        )
        return dq, dk, dv, None


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    """softmax(q k^T / sqrt(d) [+ causal mask]) v, differentiable in q, k and v."""
    return AttentionFunction.apply(q, k, v, causal)
