"""Reference: grouped-query attention (GQA), written out as an eager PyTorch model computes it.

q has kv_heads * group heads; each key/value head serves `group` consecutive query heads.
Scores and the product with v run in the inputs' dtype (cuBLAS accumulates in float32), the
softmax in float32; with float64 inputs every step is float64 (the judge's ground truth).
"""

import torch


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool) -> torch.Tensor:
    group = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    scores = (q @ k.transpose(-1, -2)) * q.shape[-1] ** -0.5
    if causal:
        n = scores.shape[-1]
        above = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(above, float("-inf"))
    compute = torch.promote_types(scores.dtype, torch.float32)
    probs = torch.softmax(scores.to(compute), dim=-1).to(q.dtype)
    return probs @ v
