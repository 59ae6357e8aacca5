"""RMSNorm forward and backward in Triton: your submission (rename nothing; write the kernels).

Contract (the judge calls `rmsnorm(x, weight, eps)`, then takes gradients through the result):
    x:      contiguous (rows, cols) tensor, float32, float16 or bfloat16; requires grad.
    weight: contiguous (cols,) tensor of the same dtype; requires grad.
    eps:    Python float (no gradient).
    returns a new (rows, cols) tensor of x's dtype and device:
        y = x / sqrt(mean(x**2 over the row) + eps) * weight
    and, through torch.autograd, the gradients of x and weight for any upstream gradient dy:
        with r = 1 / sqrt(mean(x**2) + eps) per row and g = dy * weight,
        dx = r * g - x * r**3 * mean(g * x over the row)
        dweight = sum over rows of dy * x * r
    in x's and weight's dtypes, with every sum accumulated in float32 (or better).

Forward and backward must both be your own Triton kernels (@triton.jit), joined by a
torch.autograd.Function; PyTorch may only allocate buffers. Inputs must not be modified, and
the same inputs must give bitwise the same outputs and gradients (no order-dependent atomics).
Rows and columns of any size will be tested, including sizes you are not shown.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def forward_kernel(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    # Your kernel goes here: normalize one row (or several) of x into y; keep what the backward needs.
    pass


@triton.jit
def backward_kernel(x_ptr, w_ptr, dy_ptr, dx_ptr, dw_ptr, n_cols, BLOCK: tl.constexpr):
    # Your kernel goes here: dx for one row (or several), and their share of dweight.
    pass


class RMSNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
        # Your kernel goes here: launch the forward kernel; save what the backward needs in ctx.
        raise NotImplementedError("write the forward kernel")

    @staticmethod
    def backward(ctx, dy: torch.Tensor):
        # Your kernel goes here: return (dx, dweight, None).
        raise NotImplementedError("write the backward kernel(s)")


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    return RMSNormFunction.apply(x, weight, eps)
