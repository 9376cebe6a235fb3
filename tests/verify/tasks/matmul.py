"""A plain matmul C = A @ B (test task for the verifier)."""

import torch
import torch.nn as nn

M, K, N = 512, 256, 384

MTMC = {"cpu_sizes": [{"M": 33, "K": 40, "N": 17}, {"M": 16, "K": 16, "N": 48}]}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a @ b


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
