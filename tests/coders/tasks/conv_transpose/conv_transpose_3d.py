"""ConvTranspose3d with a bias; the CPU sizes walk the geometry (read from the module at run time)."""
import torch
import torch.nn as nn

B, C_IN, C_OUT, D, H, W = 2, 16, 32, 8, 16, 12
KERNEL, STRIDE, PADDING, OUTPUT_PADDING, DILATION, GROUPS = (3, 2, 3), (2, 1, 2), (1, 0, 1), 0, 1, 1


class Model(nn.Module):
    def __init__(self, c_in, c_out, kernel, stride, padding, output_padding, dilation, groups):
        super().__init__()
        self.up = nn.ConvTranspose3d(c_in, c_out, kernel, stride=stride, padding=padding,
                                     output_padding=output_padding, dilation=dilation, groups=groups)

    def forward(self, x):
        return self.up(x)


def get_inputs():
    return [torch.randn(B, C_IN, D, H, W)]


def get_init_inputs():
    return [C_IN, C_OUT, KERNEL, STRIDE, PADDING, OUTPUT_PADDING, DILATION, GROUPS]


MTMC = {"cpu_sizes": [{"B": 2, "C_IN": 3, "C_OUT": 5, "D": 3, "H": 4, "W": 5}]}
