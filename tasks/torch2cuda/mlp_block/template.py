"""Transformer MLP block (RMSNorm, SwiGLU MLP, residual) in CUDA: your submission.

Contract (the judge calls `mlp_block(x, norm_weight, w_gate, w_up, w_down, eps)`):
    x:           contiguous (tokens, model_dim) tensor, float16 or bfloat16.
    norm_weight: contiguous (model_dim,) tensor of x's dtype.
    w_gate, w_up: contiguous (ffn, model_dim) tensors (torch.nn.Linear layout, no bias).
    w_down:      contiguous (model_dim, ffn) tensor.
    eps:         Python float.
    returns a new contiguous (tokens, model_dim) tensor of x's dtype:
        h   = x / sqrt(mean(x^2 over the row) + eps) * norm_weight
        a   = silu(h @ w_gate^T) * (h @ w_up^T),  silu(g) = g * sigmoid(g)
        out = x + a @ w_down^T
    with every sum accumulated in float32; intermediates may be kept in float32 or rounded to
    x's dtype.

The work must be done by your own CUDA kernel(s) (load_inline or CuPy raw kernels, on PyTorch's current stream); PyTorch may only allocate
buffers (no matmul, linear, silu, ...). Inputs must not be modified, and the same inputs must
give bitwise the same output.
"""

import torch
from torch.utils.cpp_extension import load_inline


def mlp_block(
    x: torch.Tensor,
    norm_weight: torch.Tensor,
    w_gate: torch.Tensor,
    w_up: torch.Tensor,
    w_down: torch.Tensor,
    eps: float,
) -> torch.Tensor:
    raise NotImplementedError("write the CUDA kernel(s) and launch them here")
