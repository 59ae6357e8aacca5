"""Reference: log-softmax over the last dimension of a 2-D tensor (e.g. logits over a vocabulary)."""

import torch


def reference(x: torch.Tensor) -> torch.Tensor:
    # Computed in at least float32 (float64 for the judge's ground truth), rounded once.
    compute = torch.promote_types(x.dtype, torch.float32)
    return torch.log_softmax(x.to(compute), dim=-1).to(x.dtype)
