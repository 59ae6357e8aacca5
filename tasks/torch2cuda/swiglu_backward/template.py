"""SwiGLU forward and backward in CUDA: your submission (rename nothing; write the kernels).

Contract (the judge calls `swiglu(gate, up)`, then takes gradients through the result):
    gate, up: contiguous (rows, ffn_dim) tensors of one dtype, float32 or bfloat16; both
              require grad.
    returns a new (rows, ffn_dim) tensor of that dtype and device:
        y = silu(gate) * up,  silu(g) = g * sigmoid(g)
    and, through torch.autograd, for any upstream gradient dy, with s = sigmoid(gate):
        dgate = dy * up * s * (1 + gate * (1 - s))
        dup   = dy * silu(gate)
    in float32 (or better), each rounded once to the inputs' dtype.

Forward and backward must both be your own CUDA kernels (load_inline or CuPy raw kernels, on PyTorch's current stream), joined by a
torch.autograd.Function; PyTorch may only allocate buffers. Inputs must not be modified, and
the same inputs must give bitwise the same outputs and gradients.
"""

import torch
from torch.utils.cpp_extension import load_inline


class SwiGLUFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
        # Your kernel goes here: launch the forward kernel; save what the backward needs in ctx.
        raise NotImplementedError("write the forward kernel")

    @staticmethod
    def backward(ctx, dy: torch.Tensor):
        # Your kernel goes here: return (dgate, dup).
        raise NotImplementedError("write the backward kernel")


def swiglu(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    return SwiGLUFunction.apply(gate, up)
