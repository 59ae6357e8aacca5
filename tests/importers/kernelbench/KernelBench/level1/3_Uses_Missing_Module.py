import gauntlet_fixture_not_installed as helper
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x * float(helper.pi)


n = 16


def get_inputs():
    return [torch.rand(n)]


def get_init_inputs():
    return []
