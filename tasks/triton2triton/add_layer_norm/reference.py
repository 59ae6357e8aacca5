"""Reference: residual add, then layer normalization of the sum (a transformer's pre-norm step).

Returns (y, h): h = x + residual, the new residual stream, rounded to the inputs' dtype, and
y = layer_norm(h) * weight + bias, where the normalization sees the sum before rounding.
"""

import torch


def reference(
    x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float
) -> tuple[torch.Tensor, torch.Tensor]:
    # In at least float32 (float64 for the judge's ground truth); each output rounded once.
    compute = torch.promote_types(x.dtype, torch.float32)
    h = x.to(compute) + residual.to(compute)
    y = torch.nn.functional.layer_norm(
        h, (h.shape[-1],), weight.to(compute), bias.to(compute), eps
    )
    return y.to(x.dtype), h.to(x.dtype)
