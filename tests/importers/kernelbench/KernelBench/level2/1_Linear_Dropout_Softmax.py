import torch
import torch.nn as nn


class Model(nn.Module):
    """Linear, live dropout, softmax (a fixture: dropout makes every call different)."""

    def __init__(self, in_features, out_features, dropout_p):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.dropout = nn.Dropout(dropout_p)

    def forward(self, x):
        return torch.softmax(self.dropout(self.linear(x)), dim=1)


batch_size = 32
in_features = 40
out_features = 24
dropout_p = 0.3


def get_inputs():
    return [torch.rand(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features, dropout_p]
