"""3x3 conv2d (vendor, no bias), then eval-mode BatchNorm2d and SiLU, in fp32."""

import torch
import torch.nn as nn
import torch.nn.functional as F

# ~1.5-4 ms eager on H100: conv 155 GFLOP (~0.6 ms with cuDNN's default TF32, ~3 ms strict fp32)
# + batchnorm and silu, each a read + write of the 0.54 GB output
# measured (one H100, torch 2.11, median of 8): 1.79 ms; 1.82 ms at the gpu_sizes shape
batch = 64
in_channels = 64
out_channels = 128
height = 128
width = 128


class Model(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(out_channels)
        # running statistics and affine far from 0/1, so folding them in actually matters
        nn.init.normal_(self.bn.weight)
        nn.init.normal_(self.bn.bias)
        self.bn.running_mean.normal_(0.0, 0.5)
        self.bn.running_var.uniform_(0.25, 2.0)

    def forward(self, x):
        return F.silu(self.bn(self.conv(x)))


def get_inputs():
    return [torch.randn(batch, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels]


MTMC = {
    "mode": "eval",  # an inference block: BatchNorm with its running statistics
    "family": "conv",
    "split": "eval",
    "library": ["conv2d"],
    "cpu_sizes": [{"batch": 2, "in_channels": 3, "out_channels": 5, "height": 11, "width": 9},
                  {"batch": 3, "in_channels": 5, "out_channels": 7, "height": 7, "width": 12}],
    "gpu_sizes": [{"batch": 63, "height": 127, "width": 129}],
}
