"""Causal scaled dot-product attention."""
import torch
import torch.nn as nn
import torch.nn.functional as F

B, H, S, D = 8, 16, 1024, 64


class Model(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def get_inputs():
    return [torch.randn(B, H, S, D), torch.randn(B, H, S, D), torch.randn(B, H, S, D)]


def get_init_inputs():
    return []


MTMC = {"cpu_sizes": [{"B": 1, "H": 2, "S": 45, "D": 24}]}
