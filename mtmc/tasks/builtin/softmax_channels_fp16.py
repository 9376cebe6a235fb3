"""Softmax over the channel dimension (dim=1, strided) of an NCHW fp16 tensor."""

import torch
import torch.nn as nn

# ~1.4 ms eager on H100 at full bandwidth (one read + one write of 2.15 GB); strided rows may be slower
# measured (one H100, torch 2.11, median of 8): 10.13 ms; 11.41 ms at the gpu_sizes shape
batch = 128
channels = 128
height = 256
width = 256
dtype = torch.float16


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(batch, channels, height, width, dtype=dtype) * 2]


def get_init_inputs():
    return []


MTMC = {
    "family": "softmax",
    "split": "train",
    "cpu_sizes": [{"batch": 2, "channels": 7, "height": 11, "width": 13},
                  {"batch": 3, "channels": 37, "height": 5, "width": 9}],
    "gpu_sizes": [{"batch": 127, "channels": 125, "height": 255, "width": 257}],
}
