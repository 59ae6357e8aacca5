"""Reference: a Llama-style transformer MLP block with its pre-norm and residual connection.

out = x + down(silu(gate(h)) * up(h)), h = rmsnorm(x) * norm_weight, all linears without bias,
written as an eager PyTorch model runs it: the norm's statistics in float32 and the rest in the
inputs' dtype (cuBLAS accumulates in float32). With float64 inputs every step is float64 (the
judge's ground truth).
"""

import torch


def reference(
    x: torch.Tensor,
    norm_weight: torch.Tensor,
    w_gate: torch.Tensor,
    w_up: torch.Tensor,
    w_down: torch.Tensor,
    eps: float,
) -> torch.Tensor:
    compute = torch.promote_types(x.dtype, torch.float32)
    xc = x.to(compute)
    h = xc * torch.rsqrt(xc.pow(2).mean(dim=-1, keepdim=True) + eps) * norm_weight.to(compute)
    h = h.to(x.dtype)
    linear = torch.nn.functional.linear
    a = torch.nn.functional.silu(linear(h, w_gate)) * linear(h, w_up)
    return x + linear(a, w_down)
