"""LayerNorm over the last dim followed by GELU."""
import torch
import torch.nn as nn
import torch.nn.functional as F

B, S, D = 16, 128, 1024


class Model(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.norm = nn.LayerNorm(d)

    def forward(self, x):
        return F.gelu(self.norm(x))


def get_inputs():
    return [torch.randn(B, S, D)]


def get_init_inputs():
    return [D]


MTMC = {"cpu_sizes": [{"B": 2, "S": 3, "D": 47}]}
