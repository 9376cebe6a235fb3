"""A fused pointwise chain of two inputs: sigmoid(x) * y + 2 * x (test task for the verifier)."""

import torch
import torch.nn as nn

n = 1 << 20

MTMC = {"cpu_sizes": [{"n": 1000}, {"n": 257}]}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        return torch.sigmoid(x) * y + 2.0 * x


def get_inputs():
    return [torch.randn(n), torch.randn(n)]


def get_init_inputs():
    return []
