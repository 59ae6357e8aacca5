"""Reference: a linear layer followed by the exact GELU, y = gelu(x @ weight^T + bias)."""

import torch


def reference(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    # Written as a PyTorch model runs it, in the inputs' dtype (cuBLAS accumulates in float32);
    # with float64 inputs it is the judge's ground truth.
    return torch.nn.functional.gelu(torch.nn.functional.linear(x, weight, bias))
