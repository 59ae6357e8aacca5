"""Reference: matrix-vector product y = W @ v (a decode step's projection)."""

import torch


def reference(weight: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    # Accumulated in at least float32 (float64 for the judge's ground truth), rounded once.
    compute = torch.promote_types(weight.dtype, torch.float32)
    return (weight.to(compute) @ v.to(compute)).to(weight.dtype)
