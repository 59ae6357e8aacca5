"""Rotary position embedding (rotate-half) on q and k in Triton: your submission (rename nothing).

Contract (the judge calls `rope(q, k, cos, sin)`):
    q: contiguous (batch, seq, q_heads, head_dim), k: contiguous (batch, seq, kv_heads,
       head_dim), one dtype (float32, float16 or bfloat16); head_dim even.
    cos, sin: contiguous float32 (seq, head_dim // 2).
    returns (q_rot, k_rot), new tensors of q's and k's shapes and dtype, where for
    t1 = t[..., :half], t2 = t[..., half:]:  rot(t) = cat(t1 * cos - t2 * sin, t2 * cos + t1 * sin)
    computed in float32 (or better) and rounded once.

The work must be done by your own Triton kernel(s) (@triton.jit); PyTorch may only allocate
buffers. Inputs must not be modified, and the same inputs must give bitwise the same outputs.
"""

import torch
import triton
import triton.language as tl


def rope(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
    raise NotImplementedError("write the Triton kernel(s) and launch them here")
