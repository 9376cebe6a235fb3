"""Attention probabilities with a per-key bias: softmax(q k^T / 8 + bias), no value matmul, fp16."""
import torch
import torch.nn as nn

B, H, S, T, D = 4, 8, 256, 512, 64


class Model(nn.Module):
    def __init__(self, T):
        super().__init__()
        self.key_bias = nn.Parameter(torch.randn(T, dtype=torch.float16))

    def forward(self, q, k):
        scores = torch.matmul(q, k.transpose(-2, -1)) / 8.0 + self.key_bias
        return torch.softmax(scores, dim=-1)


def get_inputs():
    return [torch.randn(B, H, S, D, dtype=torch.float16), torch.randn(B, H, T, D, dtype=torch.float16)]


def get_init_inputs():
    return [T]


MTMC = {"cpu_sizes": [{"B": 1, "H": 2, "S": 37, "T": 29, "D": 24}]}
