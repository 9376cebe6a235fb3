"""A matmul with a long reduction dim against a transposed operand, plus addmm."""
import torch
import torch.nn as nn

M, K, N = 256, 16384, 256


class Model(nn.Module):
    def forward(self, a, b, c):
        return a @ b.t(), torch.addmm(c, a, b.t(), beta=0.5)


def get_inputs():
    return [torch.randn(M, K), torch.randn(N, K), torch.randn(M, N)]


def get_init_inputs():
    return []


MTMC = {"cpu_sizes": [{"M": 20, "K": 300, "N": 24}]}
