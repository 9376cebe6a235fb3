"""ConvTranspose2d with every geometry argument: the CPU sizes walk stride, padding, output_padding,
dilation and groups (read from the module at run time), with asymmetric kernels and inputs."""
import torch
import torch.nn as nn

B, C_IN, C_OUT, H, W = 4, 32, 64, 32, 24
KERNEL, STRIDE, PADDING, OUTPUT_PADDING, DILATION, GROUPS = (3, 2), (2, 1), (1, 0), (1, 0), (1, 2), 2


class Model(nn.Module):
    def __init__(self, c_in, c_out, kernel, stride, padding, output_padding, dilation, groups):
        super().__init__()
        self.up = nn.ConvTranspose2d(c_in, c_out, kernel, stride=stride, padding=padding,
                                     output_padding=output_padding, dilation=dilation, groups=groups)

    def forward(self, x):
        return self.up(x)


def get_inputs():
    return [torch.randn(B, C_IN, H, W)]


def get_init_inputs():
    return [C_IN, C_OUT, KERNEL, STRIDE, PADDING, OUTPUT_PADDING, DILATION, GROUPS]


MTMC = {"cpu_sizes": [{"B": 2, "C_IN": 6, "C_OUT": 4, "H": 5, "W": 7}]}
