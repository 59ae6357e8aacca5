"""An honest GPU MODE submission to the fixture problem mini/scale_py: fills `out`."""

import triton
import triton.language as tl


@triton.jit
def _scale(x_ptr, s_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    s = tl.load(s_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x * s, mask=mask)


def custom_kernel(data):
    x, scale, out = data
    n = x.numel()
    _scale[(triton.cdiv(n, 256),)](x, scale, out, n, BLOCK=256)
    return out
