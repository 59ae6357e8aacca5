"""Inclusive prefix sum along rows in Triton: a straightforward first version.

One program per row walks its row in BLOCK-sized chunks: it scans each chunk with tl.cumsum,
adds the running total of the chunks before it, and carries the chunk's sum forward. Correct
for any length, one read and one write, but a row is scanned by a single program from start to
end, so a few long rows keep only a few of the GPU's cores busy.
"""

import torch
import triton
import triton.language as tl

BLOCK = 2048


@triton.jit
def cumsum_kernel(x_ptr, y_ptr, length, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * length
    y_row = y_ptr + row * length
    carry = tl.zeros([], dtype=tl.float32)
    for start in range(0, length, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        mask = offs < length
        x = tl.load(x_row + offs, mask=mask, other=0.0).to(tl.float32)
        y = tl.cumsum(x, axis=0) + carry
        tl.store(y_row + offs, y.to(y_ptr.dtype.element_ty), mask=mask)
        carry += tl.sum(x, axis=0)


def cumsum(x: torch.Tensor) -> torch.Tensor:
    """Inclusive cumulative sum over the last dimension of a contiguous 2-D tensor."""
    rows, length = x.shape
    y = torch.empty_like(x)
    cumsum_kernel[(rows,)](x, y, length, BLOCK=BLOCK, num_warps=8)
    return y
