"""Reference: RMSNorm over the last dimension with a learned scale, as in Llama."""

import torch


def reference(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    # Statistics in at least float32 (float64 for the judge's ground truth), rounded once.
    compute = torch.promote_types(x.dtype, torch.float32)
    xc = x.to(compute)
    y = xc * torch.rsqrt(xc.pow(2).mean(dim=-1, keepdim=True) + eps) * weight.to(compute)
    return y.to(x.dtype)
