"""3x3 conv2d (vendor), then ReLU and a per-channel bias add, in fp32."""

import torch
import torch.nn as nn

# ~1.5-4 ms eager on H100: conv 155 GFLOP (~0.6 ms with cuDNN's default TF32, ~3 ms strict fp32)
# + relu and add, each a read + write of the 0.54 GB output
# measured (one H100, torch 2.11, median of 8): 2.25 ms; 2.24 ms at the gpu_sizes shape
batch = 64
in_channels = 64
out_channels = 128
height = 128
width = 128


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1)
        nn.init.normal_(self.conv.bias, std=0.5)
        self.bias = nn.Parameter(torch.randn(out_channels, 1, 1))

    def forward(self, x):
        return torch.relu(self.conv(x)) + self.bias


def get_inputs():
    return [torch.randn(batch, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels]


MTMC = {
    "family": "conv",
    "split": "train",
    "library": ["conv2d"],
    "cpu_sizes": [{"batch": 2, "in_channels": 3, "out_channels": 5, "height": 11, "width": 9},
                  {"batch": 3, "in_channels": 5, "out_channels": 7, "height": 7, "width": 12}],
    "gpu_sizes": [{"batch": 63, "height": 127, "width": 129}],
}
