"""Reference: inclusive prefix sum (cumulative sum) along the last dimension."""

import torch


def reference(x: torch.Tensor) -> torch.Tensor:
    # Summed in at least float32 (float64 for the judge's ground truth), rounded once.
    compute = torch.promote_types(x.dtype, torch.float32)
    return torch.cumsum(x.to(compute), dim=-1).to(x.dtype)
