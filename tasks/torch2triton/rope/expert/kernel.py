"""Rotary position embedding in Triton: q and k in one launch, all heads of a token at once.

Each program takes one token: it loads the token's cos and sin rows once and rotates every
head of q and of k with them as [heads, head_dim / 2] tiles, in one launch and one pass over
q and k; eager PyTorch's rotate-half writes and re-reads the halves, the products and the
concatenation in about ten launches per tensor.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _rotate_heads(x_ptr, y_ptr, token, heads, half, c, s, cols, BLOCK_H: tl.constexpr):
    h = tl.arange(0, BLOCK_H)
    mask = (h[:, None] < heads) & (cols[None, :] < half)
    offs = token * heads * 2 * half + h[:, None] * 2 * half + cols[None, :]
    x1 = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(x_ptr + offs + half, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, (x1 * c[None, :] - x2 * s[None, :]).to(y_ptr.dtype.element_ty), mask=mask)
    tl.store(y_ptr + offs + half, (x2 * c[None, :] + x1 * s[None, :]).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def rope_kernel(
    q_ptr, k_ptr, cos_ptr, sin_ptr, qo_ptr, ko_ptr, seq, q_heads, kv_heads, half,
    BLOCK_D: tl.constexpr, BLOCK_HQ: tl.constexpr, BLOCK_HK: tl.constexpr,
):
    token = tl.program_id(0).to(tl.int64)  # one (batch, position)
    pos = token % seq
    cols = tl.arange(0, BLOCK_D)
    col_mask = cols < half
    c = tl.load(cos_ptr + pos * half + cols, mask=col_mask, other=0.0)
    s = tl.load(sin_ptr + pos * half + cols, mask=col_mask, other=0.0)
    _rotate_heads(q_ptr, qo_ptr, token, q_heads, half, c, s, cols, BLOCK_HQ)
    _rotate_heads(k_ptr, ko_ptr, token, kv_heads, half, c, s, cols, BLOCK_HK)


def rope(
    q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotate contiguous q (B, S, Hq, D) and k (B, S, Hk, D) by float32 cos/sin (S, D/2)."""
    batch, seq, q_heads, dim = q.shape
    kv_heads = k.shape[2]
    half = dim // 2
    q_out = torch.empty_like(q)
    k_out = torch.empty_like(k)
    block_d = triton.next_power_of_2(half)
    block_hq = triton.next_power_of_2(q_heads)
    block_hk = triton.next_power_of_2(kv_heads)
    tile = (block_hq + block_hk) * block_d
    rope_kernel[(batch * seq,)](
        q, k, cos, sin, q_out, k_out, seq, q_heads, kv_heads, half,
        BLOCK_D=block_d, BLOCK_HQ=block_hq, BLOCK_HK=block_hk,
        num_warps=4 if tile <= 4096 else 8,
    )
    return q_out, k_out
