"""Transformer MLP block in Triton: three kernels, every element-wise step fused away.

1. rmsnorm_kernel: one read of x per tile of whole rows; writes h = x * rstd * norm_weight.
2. gemm_kernel (DUAL): the gate and up projections in one pipelined tensor-core GEMM with two
   float32 accumulators sharing each loaded tile of h; the epilogue writes a = silu(g) * u, so
   gate and up (each tokens x ffn) never reach memory.
3. gemm_kernel (RESIDUAL): the down projection, with x added to the accumulator in the epilogue.
Eager PyTorch runs ~7 element-wise kernels for the norm, writes and re-reads gate and up for
SiLU and the product, and adds the residual in a last pass.
"""

import torch
import triton
import triton.language as tl

LOG2E = tl.constexpr(1.4426950408889634)
SMS = 132


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, h_ptr, n_rows, n_cols, eps, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    col_mask = cols < n_cols
    mask = (rows[:, None] < n_rows) & col_mask[None, :]
    offs = rows.to(tl.int64)[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / n_cols + eps)
    tl.store(h_ptr + offs, (x * rstd[:, None] * w[None, :]).to(h_ptr.dtype.element_ty), mask=mask)


@triton.jit
def gemm_kernel(
    a_ptr, b_ptr, b2_ptr, r_ptr, c_ptr, M, N, K,
    DUAL: tl.constexpr, RESIDUAL: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    """C (M, N) = A (M, K) @ B^T for B of shape (N, K); DUAL: silu(A @ B^T) * (A @ B2^T)."""
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
    b_offs = rbn[None, :].to(tl.int64) * K + rk[:, None]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    acc2 = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=rk[None, :] < k_left, other=0.0)
        b = tl.load(b_ptr + b_offs, mask=rk[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        if DUAL:
            b2 = tl.load(b2_ptr + b_offs, mask=rk[:, None] < k_left, other=0.0)
            acc2 = tl.dot(a, b2, acc2)
        a_ptrs += BLOCK_K
        b_offs += BLOCK_K
    if DUAL:
        acc = acc / (1.0 + tl.exp2(-acc * LOG2E)) * acc2
    c_offs = rm[:, None].to(tl.int64) * N + rn[None, :]
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    if RESIDUAL:
        acc += tl.load(r_ptr + c_offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(c_ptr + c_offs, acc.to(c_ptr.dtype.element_ty), mask=mask)


def _gemm(a, b, c, M, N, K, b2=None, residual=None):
    if b2 is not None:
        # Two accumulators: 128 x 128 tiles keep them in registers.
        big = triton.cdiv(M, 128) * triton.cdiv(N, 128) >= SMS
        bm, bn, bk, warps, stages = (128, 128, 64, 8, 3) if big else (64, 128, 64, 4, 3)
    elif triton.cdiv(M, 128) * triton.cdiv(N, 256) >= SMS:
        bm, bn, bk, warps, stages = 128, 256, 64, 8, 3
    elif triton.cdiv(M, 128) * triton.cdiv(N, 128) >= SMS:
        bm, bn, bk, warps, stages = 128, 128, 64, 8, 4
    else:
        bm, bn, bk, warps, stages = 64, 128, 64, 4, 4
    gemm_kernel[(triton.cdiv(M, bm) * triton.cdiv(N, bn),)](
        a, b, b2 if b2 is not None else b, residual if residual is not None else c, c, M, N, K,
        DUAL=b2 is not None, RESIDUAL=residual is not None,
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=warps, num_stages=stages,
    )


def mlp_block(
    x: torch.Tensor,
    norm_weight: torch.Tensor,
    w_gate: torch.Tensor,
    w_up: torch.Tensor,
    w_down: torch.Tensor,
    eps: float,
) -> torch.Tensor:
    """x + down(silu(gate(h)) * up(h)) with h = rmsnorm(x) * norm_weight."""
    tokens, hidden = x.shape
    ffn = w_gate.shape[0]
    h = torch.empty_like(x)
    block_n = triton.next_power_of_2(hidden)
    block_m = max(1, min(8, 4096 // block_n))
    rmsnorm_kernel[(triton.cdiv(tokens, block_m),)](
        x, norm_weight, h, tokens, hidden, eps, BLOCK_M=block_m, BLOCK_N=block_n,
        num_warps=4 if block_m * block_n <= 2048 else 8 if block_m * block_n <= 8192 else 16,
    )
    a = torch.empty((tokens, ffn), dtype=x.dtype, device=x.device)
    _gemm(h, w_gate, a, tokens, ffn, hidden, b2=w_up)
    out = torch.empty_like(x)
    _gemm(a, w_down, out, tokens, hidden, ffn, residual=x)
    return out
