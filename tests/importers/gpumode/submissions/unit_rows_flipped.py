"""A GPU MODE submission to mini/unit_rows_py whose rows point the other way: -x / |x|.

Right by the problem's own checker (a row's sign is free), wrong element by element.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _unit_rows(x_ptr, out_ptr, cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offsets = tl.arange(0, BLOCK)
    mask = offsets < cols
    x = tl.load(x_ptr + row * cols + offsets, mask=mask, other=0.0)
    norm = tl.sqrt(tl.sum(x * x, axis=0))
    tl.store(out_ptr + row * cols + offsets, -x / norm, mask=mask)


def custom_kernel(data):
    rows, cols = data.shape
    out = torch.empty_like(data)
    _unit_rows[(rows,)](data, out, cols, BLOCK=triton.next_power_of_2(cols))
    return out
