"""Reference: mean cross-entropy loss of (rows, vocab) logits against int64 targets;
differentiable in the logits."""

import torch


def reference(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    # In at least float32 (float64 for the judge's ground truth); the 0-d loss is rounded once.
    compute = torch.promote_types(logits.dtype, torch.float32)
    return torch.nn.functional.cross_entropy(logits.to(compute), targets).to(logits.dtype)
