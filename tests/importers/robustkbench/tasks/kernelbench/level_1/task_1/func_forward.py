# A fixture of this project in robust-kbench's format (not one of robust-kbench's tasks).
import torch
import torch.nn as nn


def forward_fn(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.matmul(a, b)


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, fn=forward_fn):
        return fn(a, b)


def get_inputs(n: int = 24):
    return [torch.randn(n, n), torch.randn(n, n)]


input_names = ["a", "b"]
