"""A sort along rows: not supported by the template coder (goes to an LLM coder)."""
import torch
import torch.nn as nn

B, N = 16, 128


class Model(nn.Module):
    def forward(self, x):
        return torch.sort(x, dim=1).values


def get_inputs():
    return [torch.randn(B, N)]


def get_init_inputs():
    return []


MTMC = {"cpu_sizes": [{"B": 2, "N": 9}]}
