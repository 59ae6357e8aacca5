"""Reference: the SwiGLU gate of a gated MLP, y = silu(gate) * up; differentiable.

The judge checks y and the gradients of gate and up that autograd takes through this function.
"""

import torch


def reference(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
    # In at least float32 (float64 for the judge's ground truth), rounded once.
    compute = torch.promote_types(gate.dtype, torch.float32)
    return (torch.nn.functional.silu(gate.to(compute)) * up.to(compute)).to(gate.dtype)
