"""Grouped F.conv3d in fp16 (no bias, stride 2, padding 1), then a clamp."""
import torch
import torch.nn as nn
import torch.nn.functional as F

B, C_IN, C_OUT, D, H, W = 4, 16, 32, 16, 16, 16
GROUPS = 2


class Model(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(c_out, c_in // GROUPS, 3, 2, 3, dtype=torch.float16) * 0.2)

    def forward(self, x):
        y = F.conv3d(x, self.weight, None, stride=2, padding=1, groups=GROUPS)
        return torch.clamp(y, -1.0, 1.5)


def get_inputs():
    return [torch.randn(B, C_IN, D, H, W, dtype=torch.float16)]


def get_init_inputs():
    return [C_IN, C_OUT]


MTMC = {"cpu_sizes": [{"B": 2, "C_IN": 4, "C_OUT": 6, "D": 5, "H": 4, "W": 7}]}
