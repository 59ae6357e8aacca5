import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear, training-mode batch norm, then a shift read from a module global (a fixture).

    The linear layer's bias is cancelled by the batch norm's mean.
    """

    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.BatchNorm1d(out_features)

    def forward(self, x):
        return self.norm(self.linear(x)) + shift


batch_size = 32
feature_shape = (40,)
out_features = 24
shift = 0.5


def get_inputs():
    return [torch.rand(batch_size, *feature_shape)]


def get_init_inputs():
    return [feature_shape[0], out_features]
