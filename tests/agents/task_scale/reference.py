import torch


def reference(x: torch.Tensor) -> torch.Tensor:
    return 2 * x + 1
