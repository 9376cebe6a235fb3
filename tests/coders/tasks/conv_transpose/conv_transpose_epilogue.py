"""ConvTranspose2d followed by KernelBench level-2 style elementwise ops: a per-channel bias, a clamp,
a scale, eval BatchNorm, a tanh and a residual add of the conv's own output."""
import torch
import torch.nn as nn

B, C_IN, C_OUT, H, W = 8, 32, 64, 16, 16
KERNEL, STRIDE, PADDING, OUTPUT_PADDING = 3, 2, 1, 1


class Model(nn.Module):
    def __init__(self, c_in, c_out, kernel, stride, padding, output_padding):
        super().__init__()
        self.up = nn.ConvTranspose2d(c_in, c_out, kernel, stride=stride, padding=padding,
                                     output_padding=output_padding)
        self.bias = nn.Parameter(torch.randn(c_out, 1, 1) * 0.1)
        self.bn = nn.BatchNorm2d(c_out)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)
            self.bn.weight.uniform_(0.5, 1.5)
            self.bn.bias.uniform_(-0.5, 0.5)

    def forward(self, x):
        y = self.up(x)
        residual = y.clone().detach()
        z = torch.clamp(y + self.bias, min=-1.0, max=1.0) * 2.5
        z = torch.tanh(self.bn(z))
        return z + residual


def get_inputs():
    return [torch.randn(B, C_IN, H, W)]


def get_init_inputs():
    return [C_IN, C_OUT, KERNEL, STRIDE, PADDING, OUTPUT_PADDING]


MTMC = {"mode": "eval", "cpu_sizes": [{"B": 2, "C_IN": 3, "C_OUT": 5, "H": 5, "W": 4}]}
