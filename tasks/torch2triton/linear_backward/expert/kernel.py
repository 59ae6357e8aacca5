"""Linear layer forward and backward in Triton: one strided, pipelined GEMM kernel, three uses.

gemm_kernel computes C = A @ B for any strides of A and B (so transposed operands are views,
never copies), with large tiles, a software-pipelined K loop, grouped tile order, float32
accumulation and two optional epilogues:
- forward: y = x @ W^T (+ bias, added to the accumulator before the single rounding);
- backward: dx = dy @ W; dW = dy^T @ x, where the programs of the first column of tiles also sum
  the dy tiles they already hold to produce dbias, so dy is not read again for it.
Three GEMM launches in all, no atomics (bitwise reproducible); eager autograd runs the same three
GEMMs through cuBLAS plus a separate reduction for dbias, and its forward adds the bias in
cuBLAS's epilogue.
"""

import torch
import triton
import triton.language as tl

SMS = 132


@triton.jit
def gemm_kernel(
    a_ptr, b_ptr, c_ptr, bias_ptr, colsum_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn,
    HAS_BIAS: tl.constexpr, ROW_SUMS: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
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
    a_ptrs = a_ptr + ram[:, None].to(tl.int64) * stride_am + rk[None, :].to(tl.int64) * stride_ak
    b_ptrs = b_ptr + rk[:, None].to(tl.int64) * stride_bk + rbn[None, :].to(tl.int64) * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    row_sums = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=rk[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=rk[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        if ROW_SUMS:
            row_sums += tl.sum(a.to(tl.float32), axis=1)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    if HAS_BIAS:
        acc += tl.load(bias_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
    tl.store(
        c_ptr + rm[:, None].to(tl.int64) * N + rn[None, :],
        acc.to(c_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N),
    )
    if ROW_SUMS:
        if pid_n == 0:
            tl.store(colsum_ptr + rm, row_sums.to(colsum_ptr.dtype.element_ty), mask=rm < M)


def _gemm(a, b, c, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, bias=None, sums=None):
    """C (M, N, contiguous) = A @ B with A, B given by pointers and strides."""
    if triton.cdiv(M, 128) * triton.cdiv(N, 256) >= SMS:
        bm, bn, bk, warps, stages = 128, 256, 64, 8, 3
    elif triton.cdiv(M, 128) * triton.cdiv(N, 128) >= SMS:
        bm, bn, bk, warps, stages = 128, 128, 64, 8, 4
    else:
        bm, bn, bk, warps, stages = 64, 128, 64, 4, 4
    gemm_kernel[(triton.cdiv(M, bm) * triton.cdiv(N, bn),)](
        a, b, c, bias if bias is not None else c, sums if sums is not None else c, M, N, K,
        stride_am, stride_ak, stride_bk, stride_bn,
        HAS_BIAS=bias is not None, ROW_SUMS=sums is not None,
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, num_warps=warps, num_stages=stages,
    )


class LinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        M, K = x.shape
        N = weight.shape[0]
        y = torch.empty((M, N), dtype=x.dtype, device=x.device)
        # y = x (M, K) @ W^T (K, N): W^T[k, n] = W[n, k] sits at n * K + k.
        _gemm(x, weight, y, M, N, K, K, 1, 1, K, bias=bias)
        ctx.save_for_backward(x, weight)
        return y

    @staticmethod
    def backward(ctx, dy: torch.Tensor):
        x, weight = ctx.saved_tensors
        dy = dy.contiguous()
        M, K = x.shape
        N = weight.shape[0]
        dx = torch.empty_like(x)
        # dx (M, K) = dy (M, N) @ W (N, K).
        _gemm(dy, weight, dx, M, K, N, N, 1, K, 1)
        dw = torch.empty_like(weight)
        db = torch.empty((N,), dtype=weight.dtype, device=weight.device)
        # dW (N, K) = dy^T (N, M) @ x (M, K): dy^T[n, m] = dy[m, n] sits at m * N + n. Row sums
        # of dy^T are dbias.
        _gemm(dy, x, dw, N, K, M, 1, N, K, 1, sums=db)
        return dx, dw, db


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """x @ weight^T + bias, differentiable in x, weight and bias."""
    return LinearFunction.apply(x, weight, bias)
