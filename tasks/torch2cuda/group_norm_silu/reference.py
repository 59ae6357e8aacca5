"""Reference: GroupNorm followed by SiLU, as in a diffusion model's ResNet block."""

import torch


def reference(
    x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, groups: int, eps: float
) -> torch.Tensor:
    # In at least float32 (float64 for the judge's ground truth), rounded once.
    compute = torch.promote_types(x.dtype, torch.float32)
    y = torch.nn.functional.group_norm(
        x.to(compute), groups, weight.to(compute), bias.to(compute), eps
    )
    return torch.nn.functional.silu(y).to(x.dtype)
