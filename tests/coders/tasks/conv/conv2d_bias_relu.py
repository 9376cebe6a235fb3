"""nn.Conv2d (asymmetric kernel, stride, padding, bias) then a per-channel scale, ReLU and a residual."""
import torch
import torch.nn as nn

B, C_IN, C_OUT, H, W = 8, 16, 32, 32, 24


class Model(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, kernel_size=(3, 2), stride=(2, 1), padding=(1, 2))
        self.scale = nn.Parameter(torch.rand(c_out, 1, 1) + 0.5)

    def forward(self, x, residual):
        return torch.relu(self.conv(x) * self.scale) + residual


def get_inputs():
    x = torch.randn(B, C_IN, H, W)
    out_h, out_w = (H + 2 - 3) // 2 + 1, W + 4 - 2 + 1
    return [x, torch.randn(B, C_OUT, out_h, out_w)]


def get_init_inputs():
    return [C_IN, C_OUT]


MTMC = {"cpu_sizes": [{"B": 2, "C_IN": 3, "C_OUT": 5, "H": 7, "W": 9},
                      {"B": 1, "C_IN": 4, "C_OUT": 17, "H": 6, "W": 5}]}
