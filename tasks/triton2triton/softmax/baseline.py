"""Row softmax in Triton: a straightforward first version.

One program per row walks the row in BLOCK-sized chunks three times: once for the maximum,
once for the sum of exponentials, once to write the normalized values. It handles any row
length with a fixed block, at the price of reading each row three times.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, y_ptr, n_cols, x_row_stride, y_row_stride, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    y_row = y_ptr + row * y_row_stride

    # Pass 1: the row's maximum, so exp() never overflows.
    running_max = tl.full([BLOCK], float("-inf"), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        running_max = tl.maximum(running_max, x)
    row_max = tl.max(running_max, axis=0)

    # Pass 2: the sum of exponentials.
    running_sum = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=float("-inf")).to(tl.float32)
        running_sum += tl.exp(x - row_max)
    row_sum = tl.sum(running_sum, axis=0)

    # Pass 3: normalize and store in the output's dtype.
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=float("-inf")).to(tl.float32)
        y = tl.exp(x - row_max) / row_sum
        tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dimension of a contiguous 2-D tensor; same shape and dtype."""
    rows, cols = x.shape
    y = torch.empty_like(x)
    block = min(1024, triton.next_power_of_2(cols))
    softmax_kernel[(rows,)](x, y, cols, x.stride(0), y.stride(0), BLOCK=block)
    return y
