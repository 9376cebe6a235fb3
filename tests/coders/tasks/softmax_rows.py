"""Softmax and log-softmax over the last dim."""
import torch
import torch.nn as nn

B, N = 128, 4096


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1), torch.log_softmax(x * 2.0, dim=1)


def get_inputs():
    return [torch.randn(B, N)]


def get_init_inputs():
    return []


MTMC = {"cpu_sizes": [{"B": 4, "N": 37}, {"B": 2, "N": 1030}]}
