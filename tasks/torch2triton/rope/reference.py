"""Reference: rotary position embedding (rotate-half form) applied to queries and keys."""

import torch


def reference(
    q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    # q: (batch, seq, q_heads, head_dim), k: (batch, seq, kv_heads, head_dim),
    # cos, sin: (seq, head_dim // 2). In at least float32 (float64 for the ground truth).
    compute = torch.promote_types(q.dtype, torch.float32)
    c = cos.to(compute)[None, :, None, :]
    s = sin.to(compute)[None, :, None, :]

    def rotate(t: torch.Tensor) -> torch.Tensor:
        tc = t.to(compute)
        half = t.shape[-1] // 2
        t1, t2 = tc[..., :half], tc[..., half:]
        return torch.cat([t1 * c - t2 * s, t2 * c + t1 * s], dim=-1).to(t.dtype)

    return rotate(q), rotate(k)
