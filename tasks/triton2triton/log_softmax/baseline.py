"""Row log-softmax in Triton: a straightforward first version for rows of any length.

One program per row walks the row in BLOCK-sized chunks three times: once for the maximum,
once for the sum of exponentials, once to write x - max - log(sum). The fixed block handles
rows of any length (a vocabulary of 128K entries does not fit in registers), at the price of
reading each row from memory three times.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def log_softmax_kernel(x_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride

    # Pass 1: the row's maximum.
    running_max = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        running_max = tl.maximum(running_max, x)
    row_max = tl.max(running_max, axis=0)

    # Pass 2: the sum of exponentials, shifted by the maximum so exp() never overflows.
    running_sum = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        running_sum += tl.exp(x - row_max)
    log_sum = tl.log(tl.sum(running_sum, axis=0))

    # Pass 3: write x - max - log(sum) in the output's dtype.
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        y = x - row_max - log_sum
        tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def log_softmax(x: torch.Tensor) -> torch.Tensor:
    """Log-softmax over the last dimension of a contiguous 2-D tensor; same shape and dtype."""
    rows, cols = x.shape
    y = torch.empty_like(x)
    block = min(1024, triton.next_power_of_2(cols))
    log_softmax_kernel[(rows,)](x, y, cols, x.stride(0), y.stride(0), BLOCK=block, num_warps=4)
    return y
