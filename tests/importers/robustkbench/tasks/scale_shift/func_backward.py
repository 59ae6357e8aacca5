# A fixture of this project in robust-kbench's format (not one of robust-kbench's tasks).
import torch
import torch.nn as nn


class AutogradFunction(torch.autograd.Function):
    backward_fn = None

    @staticmethod
    def forward(ctx, x, weight, bias, alpha):
        ctx.save_for_backward(x, weight, bias)
        ctx.alpha = alpha
        return torch.tanh(alpha * x * weight + bias)

    @staticmethod
    def backward(ctx, grad_output):
        x, weight, bias = ctx.saved_tensors
        grads = AutogradFunction.backward_fn(grad_output, x, weight, bias, ctx.alpha)
        return (*grads, None)


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
        self.weight = nn.Parameter(weight, requires_grad=True)
        self.bias = nn.Parameter(bias, requires_grad=True)

    def forward(self, x: torch.Tensor, fn=forward_fn) -> torch.Tensor:
        return fn(x, self.weight, self.bias, self.alpha)


def get_inputs(batch_size: int = 32, num_features: int = 64):
    return [torch.randn(batch_size, num_features, requires_grad=True)]


input_names = ["x"]
