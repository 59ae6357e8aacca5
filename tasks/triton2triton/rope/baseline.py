"""Rotary position embedding in Triton: a straightforward first version.

One kernel rotates one tensor; it is launched once for q and once for k. Each program rotates
one head of one token: it loads the two halves of the head vector and the token's cos and sin
rows and writes (x1 cos - x2 sin, x2 cos + x1 sin).
"""

import torch
import triton
import triton.language as tl


@triton.jit
def rope_kernel(x_ptr, cos_ptr, sin_ptr, y_ptr, seq, heads, half, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)  # one (batch, position, head)
    pos = (row // heads) % seq
    cols = tl.arange(0, BLOCK)
    mask = cols < half
    base = row * 2 * half
    x1 = tl.load(x_ptr + base + cols, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(x_ptr + base + half + cols, mask=mask, other=0.0).to(tl.float32)
    c = tl.load(cos_ptr + pos * half + cols, mask=mask, other=0.0)
    s = tl.load(sin_ptr + pos * half + cols, mask=mask, other=0.0)
    tl.store(y_ptr + base + cols, (x1 * c - x2 * s).to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(y_ptr + base + half + cols, (x2 * c + x1 * s).to(y_ptr.dtype.element_ty), mask=mask)


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    batch, seq, heads, dim = x.shape
    y = torch.empty_like(x)
    half = dim // 2
    rope_kernel[(batch * seq * heads,)](
        x, cos, sin, y, seq, heads, half, BLOCK=triton.next_power_of_2(half), num_warps=1,
    )
    return y


def rope(
    q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotate contiguous q (B, S, Hq, D) and k (B, S, Hk, D) by float32 cos/sin (S, D/2)."""
    return _rotate(q, cos, sin), _rotate(k, cos, sin)
