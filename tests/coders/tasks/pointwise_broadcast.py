"""Elementwise chain with row, column and scalar broadcasting."""
import torch
import torch.nn as nn
import torch.nn.functional as F

M = 256
N = 512


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(n))

    def forward(self, x, row_scale):
        y = x * torch.sigmoid(x) + self.bias
        y = F.leaky_relu(y * row_scale, 0.1) - 0.5
        return torch.clamp(y, min=-1.0, max=2.0) ** 2 / x.shape[-1]


def get_inputs():
    return [torch.randn(M, N), torch.randn(M, 1)]


def get_init_inputs():
    return [N]


MTMC = {"cpu_sizes": [{"M": 7, "N": 33}, {"M": 3, "N": 129}]}
