"""Inception / DenseNet style concatenation: branches of different widths joined along the
channels, a tensor joined with itself along the last dim, and the joins feeding further ops."""
import torch
import torch.nn as nn

B, C_IN, H, W = 4, 8, 16, 16


class Model(nn.Module):
    def __init__(self, c_in):
        super().__init__()
        self.branch1 = nn.Conv2d(c_in, 3, 1)
        self.branch3 = nn.Sequential(nn.Conv2d(c_in, 2, 1), nn.ReLU(), nn.Conv2d(2, 5, 3, padding=1))
        self.pool = nn.MaxPool2d(3, stride=1, padding=1)

    def forward(self, x):
        joined = torch.cat([self.branch1(x), self.branch3(x), self.pool(x)], 1)
        wide = torch.cat((joined, torch.relu(joined), joined), dim=-1)
        return torch.sigmoid(wide) * 2


def get_inputs():
    return [torch.randn(B, C_IN, H, W)]


def get_init_inputs():
    return [C_IN]


MTMC = {"cpu_sizes": [{"B": 2, "C_IN": 3, "H": 5, "W": 7}]}
