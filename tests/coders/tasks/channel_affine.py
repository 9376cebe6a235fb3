"""Per-channel affine and activations on an NCHW tensor (BatchNorm in eval mode)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

B, C, H, W = 16, 32, 28, 28


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.bn = nn.BatchNorm2d(channels)
        self.scale = nn.Parameter(torch.randn(channels, 1, 1))

    def forward(self, x):
        y = self.bn(x) * self.scale
        return F.hardswish(y) + F.silu(x) * torch.tanh(x)


def get_inputs():
    return [torch.randn(B, C, H, W)]


def get_init_inputs():
    return [C]


MTMC = {"mode": "eval", "cpu_sizes": [{"B": 2, "C": 3, "H": 5, "W": 7}]}
