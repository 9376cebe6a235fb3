"""A degenerate task (S9): the row sums of a softmax are 1 whatever the input."""

import torch
import torch.nn as nn

batch_size, dim = 256, 1024

MTMC = {"cpu_sizes": [{"batch_size": 8, "dim": 64}]}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=-1).sum(dim=-1)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
