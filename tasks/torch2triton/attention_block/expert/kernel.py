"""Causal self-attention block in Triton: four kernels, no intermediate re-layout or scores.

1. layer_norm_kernel: one read of x per tile of whole rows, writes h.
2. gemm_kernel (QKV): pipelined tensor-core GEMM h @ w_qkv^T with the bias added in the
   epilogue, which stores straight into a (3, batch, heads, seq, head_dim) buffer: the head
   split costs nothing (eager PyTorch views it and copies it in the attention matmuls).
3. flash_attention_kernel: FlashAttention-style causal forward (online softmax in float32,
   exp2, diagonal-only masking, pipelined key loop) reading q, k, v from that buffer and writing
   o directly in the merged (batch, seq, heads * head_dim) layout. The seq x seq scores never
   reach memory; eager PyTorch materializes them three times (scores, float32 softmax, probs).
4. gemm_kernel (OUT): o @ w_out^T with the bias and the residual x added in the epilogue.
"""

import torch
import triton
import triton.language as tl

LOG2E = 1.4426950408889634
SMS = 132


@triton.jit
def layer_norm_kernel(
    x_ptr, w_ptr, b_ptr, h_ptr, n_rows, n_cols, eps, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    col_mask = cols < n_cols
    mask = (rows[:, None] < n_rows) & col_mask[None, :]
    offs = rows.to(tl.int64)[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=1) / n_cols
    d = tl.where(mask, x - mean[:, None], 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=1) / n_cols + eps)
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    h = d * rstd[:, None] * w[None, :] + b[None, :]
    tl.store(h_ptr + offs, h.to(h_ptr.dtype.element_ty), mask=mask)


@triton.jit
def gemm_kernel(
    a_ptr, w_ptr, bias_ptr, r_ptr, c_ptr, M, N, K, batch, seq, heads, head_dim,
    SPLIT_HEADS: tl.constexpr, RESIDUAL: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    """A (M, K) @ W^T + bias for W of shape (N, K); epilogue: head-split store or residual."""
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    first_pid_m = (pid // num_pid_in_group) * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    ram = tl.max_contiguous(tl.multiple_of(rm % M, BLOCK_M), BLOCK_M)
    rbn = tl.max_contiguous(tl.multiple_of(rn % N, BLOCK_N), BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + ram[:, None].to(tl.int64) * K + rk[None, :]
    w_ptrs = w_ptr + rbn[None, :].to(tl.int64) * K + rk[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=rk[None, :] < k_left, other=0.0)
        b = tl.load(w_ptrs, mask=rk[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K
        w_ptrs += BLOCK_K
    acc += tl.load(bias_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    if SPLIT_HEADS:
        # Row m = (b, s), column n = (which of q/k/v, head, d) -> [which, b, head, s, d].
        hidden = heads * head_dim
        rows64 = rm.to(tl.int64)
        cols64 = rn.to(tl.int64)
        row_part = (rows64 // seq) * heads * seq * head_dim + (rows64 % seq) * head_dim
        which = cols64 // hidden
        col_part = (
            which * batch * heads * seq * head_dim
            + ((cols64 % hidden) // head_dim) * seq * head_dim
            + cols64 % head_dim
        )
        tl.store(c_ptr + row_part[:, None] + col_part[None, :], acc.to(c_ptr.dtype.element_ty), mask=mask)
    else:
        c_offs = rm[:, None].to(tl.int64) * N + rn[None, :]
        if RESIDUAL:
            acc += tl.load(r_ptr + c_offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(c_ptr + c_offs, acc.to(c_ptr.dtype.element_ty), mask=mask)


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
def flash_attention_kernel(
    qkv_ptr, o_ptr, batch, heads, seq, head_dim, qk_scale,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr,
):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1).to(tl.int64)  # (batch, head)
    plane = batch * heads * seq * head_dim  # one of q, k, v
    base = bh * seq * head_dim
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rd = tl.arange(0, BLOCK_D)
    q = tl.load(
        qkv_ptr + base + rm[:, None] * head_dim + rd[None, :],
        mask=(rm[:, None] < seq) & (rd[None, :] < head_dim), other=0.0,
    )
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], dtype=tl.float32)
    k_base = qkv_ptr + plane + base
    v_base = qkv_ptr + 2 * plane + base
    diag = pid_m * BLOCK_M
    acc, l_i, m_i = _attend(
        acc, l_i, m_i, q, k_base, v_base, rm, rd, seq, head_dim, qk_scale, 0, diag, False, BLOCK_N,
    )
    acc, l_i, m_i = _attend(
        acc, l_i, m_i, q, k_base, v_base, rm, rd, seq, head_dim, qk_scale,
        diag, tl.minimum(diag + BLOCK_M, seq), True, BLOCK_N,
    )
    o = acc / l_i[:, None]
    # Merged layout: o[b, s, head * head_dim + d].
    b = bh // heads
    head = bh % heads
    o_rows = (b * seq + rm.to(tl.int64)) * heads * head_dim + head * head_dim
    tl.store(
        o_ptr + o_rows[:, None] + rd[None, :], o.to(o_ptr.dtype.element_ty),
        mask=(rm[:, None] < seq) & (rd[None, :] < head_dim),
    )


def _gemm(a, w, bias, c, M, N, K, shape=(1, 1, 1, 1), split_heads=False, residual=None):
    if triton.cdiv(M, 128) * triton.cdiv(N, 256) >= SMS:
        bm, bn, bk, warps, stages = 128, 256, 64, 8, 3
    elif triton.cdiv(M, 128) * triton.cdiv(N, 128) >= SMS:
        bm, bn, bk, warps, stages = 128, 128, 64, 8, 4
    else:
        bm, bn, bk, warps, stages = 64, 128, 64, 4, 4
    gemm_kernel[(triton.cdiv(M, bm) * triton.cdiv(N, bn),)](
        a, w, bias, residual if residual is not None else c, c, M, N, K, *shape,
        SPLIT_HEADS=split_heads, RESIDUAL=residual is not None,
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=warps, num_stages=stages,
    )


def attention_block(
    x: torch.Tensor,
    ln_weight: torch.Tensor,
    ln_bias: torch.Tensor,
    w_qkv: torch.Tensor,
    b_qkv: torch.Tensor,
    w_out: torch.Tensor,
    b_out: torch.Tensor,
    heads: int,
) -> torch.Tensor:
    """x + out_proj(causal_attention(qkv_proj(layer_norm(x)))) for contiguous (B, S, H) x."""
    batch, seq, hidden = x.shape
    head_dim = hidden // heads
    tokens = batch * seq
    h = torch.empty_like(x)
    block_n = triton.next_power_of_2(hidden)
    block_m = max(1, min(8, 4096 // block_n))
    layer_norm_kernel[(triton.cdiv(tokens, block_m),)](
        x, ln_weight, ln_bias, h, tokens, hidden, 1e-5, BLOCK_M=block_m, BLOCK_N=block_n,
        num_warps=4 if block_m * block_n <= 2048 else 8 if block_m * block_n <= 8192 else 16,
    )
    qkv = torch.empty((3, batch, heads, seq, head_dim), dtype=x.dtype, device=x.device)
    _gemm(h, w_qkv, b_qkv, qkv, tokens, 3 * hidden, hidden,
          shape=(batch, seq, heads, head_dim), split_heads=True)
    o = torch.empty_like(x)
    block_d = max(16, triton.next_power_of_2(head_dim))
    flash_attention_kernel[(triton.cdiv(seq, 128), batch * heads)](
        qkv, o, batch, heads, seq, head_dim, head_dim ** -0.5 * LOG2E,
        BLOCK_M=128, BLOCK_N=64, BLOCK_D=block_d,
        num_warps=8 if block_d >= 128 else 4, num_stages=3,
    )
    out = torch.empty_like(x)
    _gemm(o, w_out, b_out, out, tokens, hidden, hidden, residual=x)
    return out
