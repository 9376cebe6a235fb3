"""Max pooling as KernelBench writes it: the window comes from the init inputs, so a size can change it."""
import torch
import torch.nn as nn

batch_size = 16
channels = 32
height = 128
width = 128
kernel_size = 3
stride = 2
padding = 1
dilation = 2


class Model(nn.Module):
    def __init__(self, kernel_size: int, stride: int, padding: int, dilation: int):
        super().__init__()
        self.maxpool = nn.MaxPool2d(kernel_size=kernel_size, stride=stride, padding=padding,
                                    dilation=dilation)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.maxpool(x)


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [kernel_size, stride, padding, dilation]


MTMC = {"cpu_sizes": [{"batch_size": 2, "channels": 3, "height": 11, "width": 9},
                      {"batch_size": 1, "channels": 2, "height": 8, "width": 13, "kernel_size": 2,
                       "stride": 1, "padding": 0, "dilation": 1}]}
