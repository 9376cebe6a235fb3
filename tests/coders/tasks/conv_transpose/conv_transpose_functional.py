"""F.conv_transpose2d with constant geometry, an asymmetric kernel and a bias, then a ReLU."""
import torch
import torch.nn as nn
import torch.nn.functional as F

B, C_IN, C_OUT, H, W = 4, 32, 48, 16, 20


class Model(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(c_in, c_out // 3, 3, 2) * 0.1)
        self.bias = nn.Parameter(torch.randn(c_out))

    def forward(self, x):
        y = F.conv_transpose2d(x, self.weight, self.bias, stride=(2, 3), padding=1, output_padding=(1, 0),
                               groups=3, dilation=(1, 2))
        return torch.relu(y)


def get_inputs():
    return [torch.randn(B, C_IN, H, W)]


def get_init_inputs():
    return [C_IN, C_OUT]


MTMC = {"cpu_sizes": [{"B": 2, "C_IN": 6, "C_OUT": 9, "H": 3, "W": 3}]}
