"""Batched matmul, scaled, with a per-column bias and ReLU."""
import torch
import torch.nn as nn

B, M, K, N = 16, 512, 256, 512


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(n))

    def forward(self, a, b):
        return torch.relu(torch.bmm(a, b) * 0.125 + self.bias)


def get_inputs():
    return [torch.randn(B, M, K), torch.randn(B, K, N)]


def get_init_inputs():
    return [N]


MTMC = {"cpu_sizes": [{"B": 2, "M": 19, "K": 40, "N": 23}]}
