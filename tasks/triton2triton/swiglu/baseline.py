"""SwiGLU in Triton: a straightforward first version, one kernel per operation.

silu_kernel computes silu(gate) = gate * sigmoid(gate) for the left half of x and writes it to
a temporary in x's dtype; mul_kernel multiplies that by the right half (up) and writes y. Each
kernel is one simple element-wise pass, as PyTorch's eager mode would run the expression.
"""

import torch
import triton
import triton.language as tl

BLOCK = 1024


@triton.jit
def silu_kernel(x_ptr, out_ptr, hidden, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < hidden
    g = tl.load(x_ptr + row * 2 * hidden + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + row * hidden + cols, (g / (1.0 + tl.exp(-g))).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def mul_kernel(s_ptr, x_ptr, y_ptr, hidden, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < hidden
    s = tl.load(s_ptr + row * hidden + cols, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(x_ptr + row * 2 * hidden + hidden + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * hidden + cols, (s * u).to(y_ptr.dtype.element_ty), mask=mask)


def swiglu(x: torch.Tensor) -> torch.Tensor:
    """silu(x[:, :h]) * x[:, h:] for a contiguous (rows, 2h) tensor; (rows, h), x's dtype."""
    rows, width = x.shape
    hidden = width // 2
    grid = (rows, triton.cdiv(hidden, BLOCK))
    s = torch.empty((rows, hidden), dtype=x.dtype, device=x.device)
    silu_kernel[grid](x, s, hidden, BLOCK=BLOCK)
    y = torch.empty((rows, hidden), dtype=x.dtype, device=x.device)
    mul_kernel[grid](s, x, y, hidden, BLOCK=BLOCK)
    return y
