"""ConvTranspose1d without a bias; the CPU sizes walk the geometry (read from the module at run time)."""
import torch
import torch.nn as nn

B, C_IN, C_OUT, L = 8, 64, 32, 128
KERNEL, STRIDE, PADDING, OUTPUT_PADDING, DILATION, GROUPS = 3, 2, 1, 1, 1, 1


class Model(nn.Module):
    def __init__(self, c_in, c_out, kernel, stride, padding, output_padding, dilation, groups):
        super().__init__()
        self.up = nn.ConvTranspose1d(c_in, c_out, kernel, stride=stride, padding=padding,
                                     output_padding=output_padding, dilation=dilation, groups=groups,
                                     bias=False)

    def forward(self, x):
        return self.up(x)


def get_inputs():
    return [torch.randn(B, C_IN, L)]


def get_init_inputs():
    return [C_IN, C_OUT, KERNEL, STRIDE, PADDING, OUTPUT_PADDING, DILATION, GROUPS]


MTMC = {"cpu_sizes": [{"B": 3, "C_IN": 5, "C_OUT": 7, "L": 11}]}
