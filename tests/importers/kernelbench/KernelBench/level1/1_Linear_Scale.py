import torch
import torch.nn as nn


class Model(nn.Module):
    """A linear layer, then a scale (a fixture in KernelBench's format)."""

    def __init__(self, in_features, out_features, scale):
        super(Model, self).__init__()  # noqa: UP008 - KernelBench's own style, on purpose
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        return self.linear(x) * self.scale


batch_size = 64
in_features = 48
out_features = 32
scale = 2.0


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, scale]
