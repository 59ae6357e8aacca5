import torch
import torch.nn as nn


class Model(nn.Module):
    """A linear layer scaled by a rate read from a tensor in __init__ (`Tensor.item()`, as
    Swin's stochastic-depth rates are), which a model built on the meta device cannot do."""

    def __init__(self, in_features, out_features):
        super(Model, self).__init__()  # noqa: UP008 - KernelBench's own style, on purpose
        rates = [x.item() for x in torch.linspace(0.5, 1.5, 3)]
        self.linear = nn.Linear(in_features, out_features)
        self.scale = rates[-1]

    def forward(self, x):
        return torch.tanh(self.linear(x)) * self.scale


batch_size = 32
in_features = 40
out_features = 24


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
