# A fixture of this project in robust-kbench's format (not one of robust-kbench's tasks).
import torch
import torch.nn as nn


def forward_fn(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, alpha: float):
    """y = tanh(alpha * x * weight + bias), over the last dimension."""
    return torch.tanh(alpha * x * weight + bias)


class Model(nn.Module):
    def __init__(self, num_features: int, alpha: float = 2.0, init_method: str = "standard"):
        super().__init__()
        self.alpha = alpha
        if init_method == "standard":
            weight, bias = torch.ones(num_features), torch.zeros(num_features)
        else:
            weight, bias = torch.randn(num_features), torch.randn(num_features)
        self.weight = nn.Parameter(weight)
        self.bias = nn.Parameter(bias)

    def forward(self, x: torch.Tensor, fn=forward_fn) -> torch.Tensor:
        return fn(x, self.weight, self.bias, self.alpha)


def get_inputs(batch_size: int = 32, num_features: int = 64):
    return [torch.randn(batch_size, num_features)]


input_names = ["x"]
