"""nn.Conv2d without bias, eval-mode BatchNorm2d and a ReLU: the whole chain is one kernel."""
import torch
import torch.nn as nn

B, C_IN, C_OUT, H, W = 8, 16, 32, 32, 32


class Model(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, kernel_size=3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(c_out)
        nn.init.normal_(self.bn.weight)
        nn.init.normal_(self.bn.bias)
        self.bn.running_mean.normal_(0.0, 0.5)
        self.bn.running_var.uniform_(0.25, 2.0)
        self.eval()

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


def get_inputs():
    return [torch.randn(B, C_IN, H, W)]


def get_init_inputs():
    return [C_IN, C_OUT]


MTMC = {"cpu_sizes": [{"B": 2, "C_IN": 3, "C_OUT": 5, "H": 7, "W": 9}]}
