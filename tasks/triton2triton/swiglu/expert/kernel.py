"""SwiGLU in Triton: one fused element-wise kernel.

Each program reads a slice of gate and the matching slice of up, computes silu(gate) * up in
float32 registers (sigmoid through exp2) and writes y once: three memory passes instead of the
baseline's five, one launch instead of two, and no intermediate rounding to x's dtype. Wide
slices (up to 4096 entries, 8 warps) keep many loads in flight per program.
"""

import torch
import triton
import triton.language as tl

LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def swiglu_kernel(x_ptr, y_ptr, hidden, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < hidden
    x_row = x_ptr + row * 2 * hidden
    g = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(x_row + hidden + cols, mask=mask, other=0.0).to(tl.float32)
    y = g / (1.0 + tl.exp2(-g * LOG2E)) * u
    tl.store(y_ptr + row * hidden + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def swiglu(x: torch.Tensor) -> torch.Tensor:
    """silu(x[:, :h]) * x[:, h:] for a contiguous (rows, 2h) tensor; (rows, h), x's dtype."""
    rows, width = x.shape
    hidden = width // 2
    y = torch.empty((rows, hidden), dtype=x.dtype, device=x.device)
    block = min(4096, max(128, triton.next_power_of_2(hidden)))
    swiglu_kernel[(rows, triton.cdiv(hidden, block))](
        x, y, hidden, BLOCK=block, num_warps=4 if block <= 1024 else 8,
    )
    return y
