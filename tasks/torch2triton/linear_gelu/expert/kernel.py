"""Linear + GELU in Triton: a pipelined tensor-core GEMM with the bias and GELU in its epilogue.

The GEMM uses large tiles (128 x 256 or 128 x 128, BLOCK_K = 64), a software-pipelined K loop
(num_stages 3-4) and grouped tile order for L2 reuse; the weight is read in its (N, K) layout
as the transposed operand. The bias add and the exact GELU run on the float32 accumulator
before the single rounding to the output dtype, so the pre-activations never go to memory:
eager PyTorch writes them (rounded) from cuBLAS and reads them back for GELU.
"""

import torch
import triton
import triton.language as tl

SQRT1_2 = tl.constexpr(0.7071067811865476)
SMS = 132


@triton.jit
def linear_gelu_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, M, N, K,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, EVEN_K: tl.constexpr,
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
    x_ptrs = x_ptr + ram[:, None].to(tl.int64) * K + rk[None, :]
    w_ptrs = w_ptr + rbn[None, :].to(tl.int64) * K + rk[:, None]  # [BLOCK_K, BLOCK_N] of W^T
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        if EVEN_K:
            a = tl.load(x_ptrs)
            b = tl.load(w_ptrs)
        else:
            k_left = K - k * BLOCK_K
            a = tl.load(x_ptrs, mask=rk[None, :] < k_left, other=0.0)
            b = tl.load(w_ptrs, mask=rk[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        x_ptrs += BLOCK_K
        w_ptrs += BLOCK_K
    h = acc + tl.load(b_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
    y = 0.5 * h * (1.0 + tl.erf(h * SQRT1_2))
    tl.store(
        y_ptr + rm[:, None].to(tl.int64) * N + rn[None, :],
        y.to(y_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N),
    )


def linear_gelu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """gelu(x @ weight^T + bias) for contiguous x (M, K), weight (N, K), bias (N,)."""
    M, K = x.shape
    N = weight.shape[0]
    y = torch.empty((M, N), dtype=x.dtype, device=x.device)
    if triton.cdiv(M, 128) * triton.cdiv(N, 256) >= SMS:
        bm, bn, bk, warps, stages = 128, 256, 64, 8, 3
    elif triton.cdiv(M, 128) * triton.cdiv(N, 128) >= SMS:
        bm, bn, bk, warps, stages = 128, 128, 64, 8, 4
    else:
        bm, bn, bk, warps, stages = 64, 128, 64, 4, 4
    linear_gelu_kernel[(triton.cdiv(M, bm) * triton.cdiv(N, bn),)](
        x, weight, bias, y, M, N, K,
        BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8, EVEN_K=K % bk == 0,
        num_warps=warps, num_stages=stages,
    )
    return y
