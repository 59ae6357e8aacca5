"""Reference: layer normalization over the last dimension, with weight and bias; differentiable.

The judge checks the output and the gradients of x, weight and bias that autograd takes
through this function.
"""

import torch


def reference(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float
) -> torch.Tensor:
    # Statistics in at least float32 (float64 for the judge's ground truth); rounded once.
    compute = torch.promote_types(x.dtype, torch.float32)
    y = torch.nn.functional.layer_norm(
        x.to(compute), (x.shape[-1],), weight.to(compute), bias.to(compute), eps
    )
    return y.to(x.dtype)
