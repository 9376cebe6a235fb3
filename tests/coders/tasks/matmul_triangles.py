"""Triangular matmuls (KernelBench 14/15's form: triu / tril of the product, here also with a
diagonal offset and after a bmm), and a product that is returned beside its triangle: once the triu
is fused into the matmul, that one kernel writes both."""
import torch
import torch.nn as nn

M, K, N, B = 512, 512, 512, 8


class Model(nn.Module):
    def forward(self, a, b, x, y):
        product = torch.matmul(a, b)
        return torch.triu(product), product, torch.tril(torch.bmm(x, y), diagonal=-2)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N), torch.randn(B, M, K), torch.randn(B, K, N)]


def get_init_inputs():
    return []


MTMC = {"cpu_sizes": [{"M": 37, "K": 29, "N": 41, "B": 2}, {"M": 19, "K": 16, "N": 11, "B": 1}]}
