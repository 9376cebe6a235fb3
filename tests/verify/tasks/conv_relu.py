"""relu(conv2d(x)): the task lets a candidate keep the vendor convolution and fuse around it."""

import torch
import torch.nn as nn

batch_size, channels, out_channels, size = 16, 16, 32, 64

MTMC = {"cpu_sizes": [{"batch_size": 2, "channels": 3, "out_channels": 4, "size": 9}],
        "library": ["conv2d"]}


class Model(nn.Module):
    def __init__(self, channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(channels, out_channels, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x))


def get_inputs():
    return [torch.randn(batch_size, channels, size, size)]


def get_init_inputs():
    return [channels, out_channels]
