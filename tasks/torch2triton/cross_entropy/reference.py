"""Reference: mean cross-entropy loss of (rows, classes) logits against int64 class targets."""

import torch


def reference(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    # Computed in at least float32 (float64 for the judge's ground truth), as training code
    # does for float16 and bfloat16 logits; the 0-d result is rounded once to the logits' dtype.
    compute = torch.promote_types(logits.dtype, torch.float32)
    loss = torch.nn.functional.cross_entropy(logits.to(compute), targets)
    return loss.to(logits.dtype)
