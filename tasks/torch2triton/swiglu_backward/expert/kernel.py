"""SwiGLU forward and backward in Triton: one fused element-wise kernel each way.

Forward: read gate and up once, write y. Backward: read gate, up and dy once, recompute
sigmoid(gate) in registers (cheaper than storing it), write dgate and dup. PyTorch's eager
autograd runs several element-wise kernels each way, with intermediates in memory; here every
byte moves once and all arithmetic is float32 in registers.
"""

import torch
import triton
import triton.language as tl

LOG2E = tl.constexpr(1.4426950408889634)
BLOCK = 2048
NUM_WARPS = 8


@triton.jit
def forward_kernel(g_ptr, u_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    g = tl.load(g_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(u_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    s = 1.0 / (1.0 + tl.exp2(-g * LOG2E))
    tl.store(y_ptr + offs, (g * s * u).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def backward_kernel(g_ptr, u_ptr, dy_ptr, dg_ptr, du_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    g = tl.load(g_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(u_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    s = 1.0 / (1.0 + tl.exp2(-g * LOG2E))
    dg = dy * u * s * (1.0 + g * (1.0 - s))
    tl.store(dg_ptr + offs, dg.to(dg_ptr.dtype.element_ty), mask=mask)
    tl.store(du_ptr + offs, (dy * g * s).to(du_ptr.dtype.element_ty), mask=mask)


class SwiGLUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(gate)
        n = gate.numel()
        forward_kernel[(triton.cdiv(n, BLOCK),)](gate, up, y, n, BLOCK=BLOCK, num_warps=NUM_WARPS)
        ctx.save_for_backward(gate, up)
        return y

    @staticmethod
    def backward(ctx, dy: torch.Tensor):
        gate, up = ctx.saved_tensors
        dy = dy.contiguous()
        dg = torch.empty_like(gate)
        du = torch.empty_like(up)
        n = gate.numel()
        backward_kernel[(triton.cdiv(n, BLOCK),)](gate, up, dy, dg, du, n, BLOCK=BLOCK, num_warps=NUM_WARPS)
        return dg, du


def swiglu(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    """silu(gate) * up, differentiable in gate and up."""
    return SwiGLUFunction.apply(gate, up)
