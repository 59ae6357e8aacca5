"""RMSNorm forward and backward in Triton, joined by a torch.autograd.Function.

Forward: one read of x per [BLOCK_M, BLOCK_N] tile of whole rows; it also keeps each row's
1 / rms in float32 for the backward, which then needs no reduction over x to find it.
Backward: each program walks a strided set of row tiles, writes dx for them, and accumulates
its share of dweight = sum_rows(dy * x * r) in float32 registers; a second small kernel sums
the per-program shares in a fixed order. No atomics, so results are bitwise reproducible.
"""

import torch
import triton
import triton.language as tl

#: Most programs of the backward's first kernel: enough to fill a large GPU, few enough that
#: the partial dweight rows stay cheap to sum.
MAX_PROGRAMS = 256


@triton.jit
def forward_kernel(
    x_ptr, w_ptr, y_ptr, rstd_ptr, n_rows, n_cols, eps,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    col_mask = cols < n_cols
    mask = (rows[:, None] < n_rows) & col_mask[None, :]
    offs = rows[:, None] * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / n_cols + eps)
    tl.store(rstd_ptr + rows, rstd, mask=rows < n_rows)
    tl.store(y_ptr + offs, (x * rstd[:, None] * w[None, :]).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def backward_kernel(
    x_ptr, w_ptr, dy_ptr, rstd_ptr, dx_ptr, dw_partial_ptr, n_rows, n_cols,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    pid = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    col_mask = cols < n_cols
    w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
    dw = tl.zeros([BLOCK_N], dtype=tl.float32)
    for row_start in range(pid * BLOCK_M, n_rows, tl.num_programs(0) * BLOCK_M):
        rows = row_start + tl.arange(0, BLOCK_M)
        row_mask = rows < n_rows
        mask = row_mask[:, None] & col_mask[None, :]
        offs = rows[:, None] * n_cols + cols[None, :]
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        rstd = tl.load(rstd_ptr + rows, mask=row_mask, other=0.0)
        x_hat = x * rstd[:, None]
        g = dy * w[None, :]
        # dx = r * (g - x_hat * mean(g * x_hat)); masked elements are zero in every term.
        c = tl.sum(g * x_hat, axis=1) / n_cols
        dx = (g - x_hat * c[:, None]) * rstd[:, None]
        tl.store(dx_ptr + offs, dx.to(dx_ptr.dtype.element_ty), mask=mask)
        dw += tl.sum(dy * x_hat, axis=0)
    tl.store(dw_partial_ptr + pid * n_cols + cols, dw, mask=col_mask)


@triton.jit
def sum_partials_kernel(
    partial_ptr, dw_ptr, n_partials, n_cols, BLOCK_P: tl.constexpr, BLOCK_N: tl.constexpr
):
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < n_cols
    acc = tl.zeros([BLOCK_N], dtype=tl.float32)
    for start in range(0, n_partials, BLOCK_P):
        parts = start + tl.arange(0, BLOCK_P)
        mask = (parts < n_partials)[:, None] & col_mask[None, :]
        offs = parts[:, None] * n_cols + cols[None, :]
        partial = tl.load(partial_ptr + offs, mask=mask, other=0.0)
        acc += tl.sum(partial, axis=0)
    tl.store(dw_ptr + cols, acc.to(dw_ptr.dtype.element_ty), mask=col_mask)


def _rows_per_program(rows: int, block_n: int) -> int:
    """Rows packed into one program: up to 2K elements, but only while ~512 programs remain.

    A small problem is latency-bound and wants every row in a program of its own; a large one
    saves per-program overhead by packing short rows.
    """
    by_size = max(1, 2048 // block_n)
    by_count = 1 << max(0, (rows // 512).bit_length() - 1)  # largest power of two <= rows/512
    return min(by_size, by_count)


def _tile(rows: int, cols: int) -> tuple[int, int, int]:
    """BLOCK_M, BLOCK_N and warps for a tile of whole rows."""
    block_n = triton.next_power_of_2(cols)
    block_m = _rows_per_program(rows, block_n)
    num_warps = 4 if block_m * block_n <= 4096 else 8 if block_n <= 8192 else 16
    return block_m, block_n, num_warps


class RMSNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
        rows, cols = x.shape
        y = torch.empty_like(x)
        rstd = torch.empty(rows, dtype=torch.float32, device=x.device)
        block_m, block_n, num_warps = _tile(rows, cols)
        forward_kernel[(triton.cdiv(rows, block_m),)](
            x, weight, y, rstd, rows, cols, eps,
            BLOCK_M=block_m, BLOCK_N=block_n, num_warps=num_warps,
        )
        ctx.save_for_backward(x, weight, rstd)
        return y

    @staticmethod
    def backward(ctx, dy: torch.Tensor):
        x, weight, rstd = ctx.saved_tensors
        dy = dy.contiguous()
        rows, cols = x.shape
        block_m, block_n, num_warps = _tile(rows, cols)
        programs = min(triton.cdiv(rows, block_m), MAX_PROGRAMS)
        dx = torch.empty_like(x)
        dw_partial = torch.empty((programs, cols), dtype=torch.float32, device=x.device)
        backward_kernel[(programs,)](
            x, weight, dy, rstd, dx, dw_partial, rows, cols,
            BLOCK_M=block_m, BLOCK_N=block_n, num_warps=num_warps,
        )
        dw = torch.empty_like(weight)
        # Column slices of about 8K partial sums each: narrow ones (more programs) when there
        # are many partials to add, wide ones when there are few.
        sum_block_n = min(block_n, max(64, triton.next_power_of_2(8192 // programs)))
        sum_partials_kernel[(triton.cdiv(cols, sum_block_n),)](
            dw_partial, dw, programs, cols,
            BLOCK_P=min(triton.next_power_of_2(programs), 64), BLOCK_N=sum_block_n,
        )
        return dx, dw, None


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """RMSNorm over the last dimension of a 2-D tensor; differentiable in x and weight."""
    return RMSNormFunction.apply(x, weight, eps)
