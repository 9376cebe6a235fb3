"""BatchNorm2d normalising with the batch's statistics (as in training mode: here without
running statistics, which the eval() of the task loader keeps), between a conv and a ReLU."""
import torch
import torch.nn as nn

B, C_IN, C, H, W = 8, 3, 16, 32, 32


class Model(nn.Module):
    def __init__(self, c_in, c):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c, 3, padding=1)
        self.bn = nn.BatchNorm2d(c, track_running_stats=False)
        nn.init.normal_(self.bn.weight)
        nn.init.normal_(self.bn.bias)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)) + 0.5)


def get_inputs():
    return [torch.randn(B, C_IN, H, W) * 3 + 1]


def get_init_inputs():
    return [C_IN, C]


MTMC = {"cpu_sizes": [{"B": 3, "C_IN": 2, "C": 5, "H": 7, "W": 6},
                      {"B": 2, "C_IN": 3, "C": 3, "H": 5, "W": 9}]}
