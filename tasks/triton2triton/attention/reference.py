"""Reference: scaled dot-product attention, optionally causal, written out step by step."""

import torch


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    # In at least float32 (float64 for the judge's ground truth), rounded once at the end.
    compute = torch.promote_types(q.dtype, torch.float32)
    qc, kc, vc = q.to(compute), k.to(compute), v.to(compute)
    scores = (qc @ kc.transpose(-1, -2)) * q.shape[-1] ** -0.5
    if causal:
        n = scores.shape[-1]
        above = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(above, float("-inf"))
    return (torch.softmax(scores, dim=-1) @ vc).to(q.dtype)
