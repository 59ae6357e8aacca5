"""Reference: bias add followed by the exact (erf) GELU, as after an MLP's first projection;
differentiable. The judge checks y and the gradients of x and bias."""

import torch


def reference(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    # In at least float32 (float64 for the judge's ground truth), rounded once.
    compute = torch.promote_types(x.dtype, torch.float32)
    return torch.nn.functional.gelu(x.to(compute) + bias.to(compute)).to(x.dtype)
