"""Reductions over a leading dim: sum over dim 1 of a 3-D tensor, softmax over dim 1, mean over dim 0."""
import torch
import torch.nn as nn

B, R, N = 32, 256, 256


class Model(nn.Module):
    def forward(self, x):
        s = x.sum(dim=1)
        p = torch.softmax(x, dim=1)
        return s, p, x.mean(dim=0)


def get_inputs():
    return [torch.randn(B, R, N)]


def get_init_inputs():
    return []


MTMC = {"cpu_sizes": [{"B": 2, "R": 19, "N": 37}]}
