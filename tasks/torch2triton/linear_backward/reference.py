"""Reference: a linear layer, y = x @ weight^T + bias; differentiable.

The judge checks y and the gradients of x, weight and bias that autograd takes through it.
"""

import torch


def reference(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    # As a PyTorch model runs it, in the inputs' dtype (cuBLAS accumulates in float32); with
    # float64 inputs it is the judge's ground truth.
    return torch.nn.functional.linear(x, weight, bias)
