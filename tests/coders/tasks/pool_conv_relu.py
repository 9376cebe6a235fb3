"""Conv2d (a library call the task allows), ReLU, max pooling and a per-channel scale: KernelBench
level 2's conv -> activation -> pool chain."""
import torch
import torch.nn as nn

B, C_IN, C_OUT, H, W = 16, 16, 32, 64, 64


class Model(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, kernel_size=3)
        self.pool = nn.MaxPool2d(kernel_size=2, ceil_mode=True)
        self.scale = nn.Parameter(torch.rand(c_out, 1, 1) + 0.5)

    def forward(self, x):
        return self.pool(torch.relu(self.conv(x) + 0.1)) * self.scale


def get_inputs():
    return [torch.randn(B, C_IN, H, W)]


def get_init_inputs():
    return [C_IN, C_OUT]


MTMC = {"cpu_sizes": [{"B": 2, "C_IN": 3, "C_OUT": 5, "H": 9, "W": 8}], "library": ["conv2d"]}
