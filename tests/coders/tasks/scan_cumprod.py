"""Cumulative products over the last dim and over the first dim of a 3-D tensor (a column scan)."""
import torch
import torch.nn as nn

B, R, N = 64, 256, 512


class Model(nn.Module):
    def forward(self, x):
        return torch.cumprod(x, dim=-1), x.cumprod(0)


def get_inputs():
    return [1.0 + 0.05 * torch.randn(B, R, N)]


def get_init_inputs():
    return []


MTMC = {"cpu_sizes": [{"B": 3, "R": 5, "N": 41}, {"B": 9, "R": 2, "N": 7}]}
