"""Reference: log-softmax over the last dimension (logits over a vocabulary); differentiable.

The judge checks the output and the gradient of x that autograd takes through this function.
"""

import torch


def reference(x: torch.Tensor) -> torch.Tensor:
    # In at least float32 (float64 for the judge's ground truth), rounded once.
    compute = torch.promote_types(x.dtype, torch.float32)
    return torch.log_softmax(x.to(compute), dim=-1).to(x.dtype)
