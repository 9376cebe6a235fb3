"""Reductions that few programs would run: the mean of everything, and a mean over dim 0."""
import torch
import torch.nn as nn

R, N = 65536, 512


class Model(nn.Module):
    def forward(self, x):
        return (x * x).mean(), torch.amax(x, dim=0) * 2.0


def get_inputs():
    return [torch.randn(R, N)]


def get_init_inputs():
    return []


MTMC = {"cpu_sizes": [{"R": 300, "N": 7}, {"R": 65, "N": 130}]}
