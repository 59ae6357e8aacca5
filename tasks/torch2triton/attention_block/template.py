"""Causal self-attention block (LayerNorm, QKV, attention, output projection, residual) in
Triton: your submission (rename nothing; write the kernels).

Contract (the judge calls
`attention_block(x, ln_weight, ln_bias, w_qkv, b_qkv, w_out, b_out, heads)`):
    x:         contiguous (batch, seq, hidden) tensor, float16 or bfloat16.
    ln_weight, ln_bias: (hidden,); w_qkv: (3 * hidden, hidden); b_qkv: (3 * hidden,);
    w_out: (hidden, hidden); b_out: (hidden,); all contiguous, of x's dtype.
    heads:     Python int; head_dim = hidden // heads is 32, 64, 96 or 128.
    returns a new contiguous (batch, seq, hidden) tensor of x's dtype:
        h = layer_norm(x over hidden, ln_weight, ln_bias, eps=1e-5)
        [q | k | v] = h @ w_qkv^T + b_qkv, each (batch, seq, hidden) split into heads:
            head j holds columns j * head_dim .. (j + 1) * head_dim - 1 of q (and of k, v)
        o = softmax(q k^T / sqrt(head_dim) + causal mask) v  per (batch, head)
        out = x + merge_heads(o) @ w_out^T + b_out
    with every sum accumulated in float32; intermediates may stay in float32 or be rounded
    to x's dtype.

The work must be done by your own Triton kernel(s) (@triton.jit); PyTorch may only allocate
buffers and make views (no matmul, linear, layer_norm, softmax, scaled_dot_product_attention).
Inputs must not be modified, and the same inputs must give bitwise the same output.
"""

import torch
import triton
import triton.language as tl


def attention_block(
    x: torch.Tensor,
    ln_weight: torch.Tensor,
    ln_bias: torch.Tensor,
    w_qkv: torch.Tensor,
    b_qkv: torch.Tensor,
    w_out: torch.Tensor,
    b_out: torch.Tensor,
    heads: int,
) -> torch.Tensor:
    raise NotImplementedError("write the Triton kernel(s) and launch them here")
