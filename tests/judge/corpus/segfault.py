# expect: crash
# reason: killed by SIG
import torch
import triton
import triton.language as tl


@triton.jit
def _k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    # A wild pointer: far outside any allocation, unmasked.
    x = tl.load(x_ptr + offs + 1_000_000_000_000)
    tl.store(out_ptr + offs, x)


def scale_add(x, y, alpha):
    out = torch.empty_like(x)
    _k[(triton.cdiv(x.numel(), 512),)](x, out, x.numel(), BLOCK=512)
    return out
