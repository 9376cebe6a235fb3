"""Attention written as matmul, scale, softmax, matmul."""
import torch
import torch.nn as nn

B, H, S, D = 8, 16, 512, 64


class Model(nn.Module):
    def forward(self, q, k, v):
        scores = torch.matmul(q, k.transpose(-2, -1)) / 8.0
        return torch.matmul(torch.softmax(scores, dim=-1), v)


def get_inputs():
    return [torch.randn(B, H, S, D), torch.randn(B, H, S, D), torch.randn(B, H, S, D)]


def get_init_inputs():
    return []


MTMC = {"cpu_sizes": [{"B": 1, "H": 2, "S": 37, "D": 16}]}
