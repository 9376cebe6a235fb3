"""Depthwise nn.Conv1d with padding='same' and dilation, then a SiLU."""
import torch
import torch.nn as nn

B, C, L = 8, 32, 128


class Model(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.conv = nn.Conv1d(channels, channels, kernel_size=4, padding="same", dilation=2,
                              groups=channels)

    def forward(self, x):
        return torch.nn.functional.silu(self.conv(x))


def get_inputs():
    return [torch.randn(B, C, L)]


def get_init_inputs():
    return [C]


MTMC = {"cpu_sizes": [{"B": 2, "C": 3, "L": 11}, {"B": 1, "C": 5, "L": 7}]}
