"""GroupNorm followed by SiLU on an NCHW tensor."""
import torch
import torch.nn as nn
import torch.nn.functional as F

B, C, H, W, G = 16, 64, 32, 32, 8


class Model(nn.Module):
    def __init__(self, groups, channels):
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels)

    def forward(self, x):
        return F.silu(self.norm(x))


def get_inputs():
    return [torch.randn(B, C, H, W)]


def get_init_inputs():
    return [G, C]


MTMC = {"cpu_sizes": [{"B": 2, "C": 6, "H": 5, "W": 3, "G": 3}]}
