"""Reference: depthwise causal 1-D convolution with bias, then SiLU (Mamba's short convolution)."""

import torch


def reference(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    # x: (batch, dim, seqlen); weight: (dim, width); bias: (dim,). In at least float32
    # (float64 for the judge's ground truth), rounded once.
    compute = torch.promote_types(x.dtype, torch.float32)
    seqlen, width = x.shape[-1], weight.shape[-1]
    y = torch.nn.functional.conv1d(
        x.to(compute), weight.to(compute)[:, None, :], bias.to(compute),
        padding=width - 1, groups=x.shape[1],
    )[..., :seqlen]
    return torch.nn.functional.silu(y).to(x.dtype)
