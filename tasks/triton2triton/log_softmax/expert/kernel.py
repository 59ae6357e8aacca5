"""Row log-softmax in Triton: one read per row when it fits, two when it does not.

- Rows of up to 8192 entries are held whole in registers ([BLOCK_M, BLOCK_N] tiles of whole
  rows, several short rows per program): one read and one write of the data.
- Longer rows (vocabularies) use the online formulation: one pass keeps a running maximum m and
  a running sum s of exp(x - m), rescaling s by exp(m_old - m_new) when the maximum grows; a
  second pass writes x - m - log(s). Two reads instead of the baseline's three, in wide
  4096-entry chunks with 8 warps.
- exp2/log2 with pre-scaled arguments are the hardware's native instructions.
"""

import torch
import triton
import triton.language as tl

LOG2E = tl.constexpr(1.4426950408889634)  # exp(x) == exp2(x * LOG2E)
LN2 = tl.constexpr(0.6931471805599453)  # log(s) == log2(s) * LN2

#: Longest row held whole in registers.
MAX_WHOLE_ROW = 8192


@triton.jit
def whole_rows_kernel(
    x_ptr, y_ptr, n_rows, n_cols, x_row_stride, y_row_stride,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < n_rows) & (cols[None, :] < n_cols)
    rows64 = rows.to(tl.int64)
    x = tl.load(
        x_ptr + rows64[:, None] * x_row_stride + cols[None, :], mask=mask, other=float("-inf")
    ).to(tl.float32)
    # Rows past the end hold only -inf; their NaNs are never stored.
    row_max = tl.max(x, axis=1)
    shifted = x - row_max[:, None]
    log_sum = tl.log2(tl.sum(tl.exp2(shifted * LOG2E), axis=1)) * LN2
    y = shifted - log_sum[:, None]
    tl.store(
        y_ptr + rows64[:, None] * y_row_stride + cols[None, :],
        y.to(y_ptr.dtype.element_ty), mask=mask,
    )


@triton.jit
def online_kernel(x_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride
    # Pass 1: running maximum and rescaled running sum, in one read. The first chunk always
    # holds a real entry, so m is finite after it and exp2(-inf - m) is a clean 0.
    m = tl.full([], float("-inf"), dtype=tl.float32)
    s = tl.zeros([], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp2((m - m_new) * LOG2E) + tl.sum(tl.exp2((x - m_new) * LOG2E), axis=0)
        m = m_new
    log_sum = tl.log2(s) * LN2
    # Pass 2: write (x - m) - log(s); x - m is exact near the maximum, where y is near zero.
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_row + cols, ((x - m) - log_sum).to(y_ptr.dtype.element_ty), mask=mask)


def _rows_per_program(rows: int, block_n: int) -> int:
    """Short rows are packed up to 4K entries a program, while ~1024 programs remain."""
    by_size = max(1, 4096 // block_n)
    by_count = 1 << max(0, (rows // 1024).bit_length() - 1)
    return min(by_size, by_count)


def log_softmax(x: torch.Tensor) -> torch.Tensor:
    """Log-softmax over the last dimension of a contiguous 2-D tensor; same shape and dtype."""
    rows, cols = x.shape
    y = torch.empty_like(x)
    if cols <= MAX_WHOLE_ROW:
        block_n = triton.next_power_of_2(cols)
        block_m = _rows_per_program(rows, block_n)
        tile = block_m * block_n
        num_warps = 4 if tile <= 2048 else 8 if tile <= 4096 else 16
        whole_rows_kernel[(triton.cdiv(rows, block_m),)](
            x, y, rows, cols, x.stride(0), y.stride(0),
            BLOCK_M=block_m, BLOCK_N=block_n, num_warps=num_warps,
        )
    else:
        online_kernel[(rows,)](
            x, y, cols, x.stride(0), y.stride(0), BLOCK=4096, num_warps=8,
        )
    return y
