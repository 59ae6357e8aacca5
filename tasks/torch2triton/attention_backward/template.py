"""Attention forward and backward in Triton: your submission (rename nothing; write kernels).

Contract (the judge calls `attention(q, k, v, causal)`, then takes gradients through it):
    q, k, v: contiguous (batch, heads, seq, head_dim) tensors of one dtype, float16 or
             bfloat16; all three require grad. head_dim is 32, 64, 96 or 128.
    causal:  Python bool; when True, query i attends to keys j <= i only.
    returns a new contiguous tensor of q's shape and dtype:
        o = softmax(q k^T / sqrt(head_dim) [+ causal mask]) v  per (batch, head)
    and, through torch.autograd, for any upstream gradient do, with P the probabilities and
    s = 1 / sqrt(head_dim):
        dv = P^T do;  dP = do v^T;  dS = P * (dP - rowsum(dP * P));  dq = s dS k;  dk = s dS^T q
    with scores, softmax and sums in float32 (probabilities and dS may be rounded to the inputs'
    dtype for the matrix products).

Forward and backward must both be your own Triton kernels (@triton.jit), joined by a
torch.autograd.Function; PyTorch may only allocate buffers. Inputs must not be modified, and
the same inputs must give bitwise the same outputs and gradients (no order-dependent atomics).
"""

import torch
import triton
import triton.language as tl


class AttentionFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
        # Your kernel goes here: launch the forward kernel; save what the backward needs in ctx.
        raise NotImplementedError("write the forward kernel")

    @staticmethod
    def backward(ctx, do: torch.Tensor):
        # Your kernel goes here: return (dq, dk, dv, None).
        raise NotImplementedError("write the backward kernels")


def attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    return AttentionFunction.apply(q, k, v, causal)
