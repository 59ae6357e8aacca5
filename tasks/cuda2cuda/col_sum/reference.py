"""Reference: column sums of a matrix (a reduction over its first dimension), e.g. a bias
gradient summed over tokens."""

import torch


def reference(x: torch.Tensor) -> torch.Tensor:
    # Summed in at least float32 (float64 for the judge's ground truth), rounded once.
    compute = torch.promote_types(x.dtype, torch.float32)
    return x.to(compute).sum(dim=0).to(x.dtype)
