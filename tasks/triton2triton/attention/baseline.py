"""Scaled dot-product attention in Triton: a straightforward first version, three kernels.

1. scores_kernel: S = Q K^T / sqrt(head_dim) for each (batch, head), 64 x 64 tiles, with the
   causal mask written as -inf; S is stored in float32, (batch, heads, seq, seq).
2. softmax_kernel: one program per row of S turns it into probabilities P, stored in the
   inputs' dtype.
3. pv_kernel: O = P V, 64-row tiles, 32 keys at a time.
Each kernel is simple and checkable alone; S and P make round trips through memory.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def scores_kernel(
    q_ptr, k_ptr, s_ptr, seq, head_dim, scale, CAUSAL: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    bh = tl.program_id(2).to(tl.int64)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rd = tl.arange(0, BLOCK_D)
    base = bh * seq * head_dim
    q = tl.load(
        q_ptr + base + rm[:, None] * head_dim + rd[None, :],
        mask=(rm[:, None] < seq) & (rd[None, :] < head_dim), other=0.0,
    )
    kt = tl.load(
        k_ptr + base + rn[None, :] * head_dim + rd[:, None],
        mask=(rn[None, :] < seq) & (rd[:, None] < head_dim), other=0.0,
    )
    s = tl.dot(q, kt) * scale
    if CAUSAL:
        s = tl.where(rm[:, None] >= rn[None, :], s, float("-inf"))
    tl.store(
        s_ptr + bh * seq * seq + rm[:, None] * seq + rn[None, :], s,
        mask=(rm[:, None] < seq) & (rn[None, :] < seq),
    )


@triton.jit
def softmax_kernel(s_ptr, p_ptr, seq, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < seq
    s = tl.load(s_ptr + row * seq + cols, mask=mask, other=float("-inf"))
    e = tl.exp(s - tl.max(s, axis=0))
    p = e / tl.sum(e, axis=0)
    tl.store(p_ptr + row * seq + cols, p.to(p_ptr.dtype.element_ty), mask=mask)


@triton.jit
def pv_kernel(
    p_ptr, v_ptr, o_ptr, seq, head_dim,
    BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_D: tl.constexpr,
):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rd = tl.arange(0, BLOCK_D)
    acc = tl.zeros((BLOCK_M, BLOCK_D), dtype=tl.float32)
    for k0 in range(0, seq, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        p = tl.load(
            p_ptr + bh * seq * seq + rm[:, None] * seq + rk[None, :],
            mask=(rm[:, None] < seq) & (rk[None, :] < seq), other=0.0,
        )
        v = tl.load(
            v_ptr + bh * seq * head_dim + rk[:, None] * head_dim + rd[None, :],
            mask=(rk[:, None] < seq) & (rd[None, :] < head_dim), other=0.0,
        )
        acc = tl.dot(p, v, acc)
    tl.store(
        o_ptr + bh * seq * head_dim + rm[:, None] * head_dim + rd[None, :],
        acc.to(o_ptr.dtype.element_ty),
        mask=(rm[:, None] < seq) & (rd[None, :] < head_dim),
    )


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    """softmax(q k^T / sqrt(d) [+ causal mask]) v for contiguous (batch, heads, seq, d) tensors."""
    batch, heads, seq, head_dim = q.shape
    bh = batch * heads
    block_d = max(16, triton.next_power_of_2(head_dim))
    s = torch.empty((batch, heads, seq, seq), dtype=torch.float32, device=q.device)
    scores_kernel[(triton.cdiv(seq, 64), triton.cdiv(seq, 64), bh)](
        q, k, s, seq, head_dim, head_dim ** -0.5, CAUSAL=causal,
        BLOCK_M=64, BLOCK_N=64, BLOCK_D=block_d, num_warps=4, num_stages=1,
    )
    p = torch.empty((batch, heads, seq, seq), dtype=q.dtype, device=q.device)
    block = triton.next_power_of_2(seq)
    softmax_kernel[(bh * seq,)](s, p, seq, BLOCK=block, num_warps=4 if block <= 2048 else 8)
    o = torch.empty_like(q)
    pv_kernel[(triton.cdiv(seq, 64), bh)](
        p, v, o, seq, head_dim,
        BLOCK_M=64, BLOCK_K=32, BLOCK_D=block_d, num_warps=4, num_stages=1,
    )
    return o
