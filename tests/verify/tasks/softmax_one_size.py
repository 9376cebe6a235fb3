"""Row softmax that declares a single size: the verifier derives a second one (test task)."""

import torch
import torch.nn as nn

batch_size = 8
dim = 100

MTMC = {"cpu_sizes": [{"batch_size": 8, "dim": 100}]}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
