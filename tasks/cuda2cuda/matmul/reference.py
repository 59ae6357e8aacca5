"""Reference: the matrix product C = A @ B."""

import torch


def reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    # dtype-generic: float64 inputs give the ground truth, native ones the expected dtype.
    return a @ b
