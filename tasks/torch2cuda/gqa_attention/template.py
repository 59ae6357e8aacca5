"""Grouped-query attention forward in CUDA: your submission (rename nothing; write kernels).

Contract (the judge calls `gqa_attention(q, k, v, causal)`):
    q:    contiguous (batch, q_heads, seq, head_dim) tensor, float16 or bfloat16.
    k, v: contiguous (batch, kv_heads, seq, head_dim) tensors of q's dtype; q_heads is a
          multiple of kv_heads, and query head h uses key/value head h // (q_heads // kv_heads).
    causal: Python bool; when True, query i attends to keys j <= i only.
    head_dim is 32, 64, 96 or 128.
    returns a new contiguous tensor of q's shape and dtype:
        o = softmax(q k^T / sqrt(head_dim) [+ causal mask]) v  per (batch, query head)
    with the scores, softmax and sums in float32 (probabilities may be rounded to q's dtype
    for the product with v).

The work must be done by your own CUDA kernel(s) (load_inline or CuPy raw kernels, on PyTorch's current stream); PyTorch may only allocate
buffers (no matmul, softmax or scaled_dot_product_attention). Inputs must not be modified, and
the same inputs must give bitwise the same output.
"""

import torch
from torch.utils.cpp_extension import load_inline


def gqa_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    raise NotImplementedError("write the CUDA kernel(s) and launch them here")
