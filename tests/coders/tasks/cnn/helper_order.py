"""A DenseNet-style constructor that needs two helper classes and two module constants: the program
copies them in this file's order, whatever order its set of names gives them (PYTHONHASHSEED)."""
import torch
import torch.nn as nn

B, C, H, W = 4, 6, 16, 16
GROWTH = 3
LAYERS = 2


class DenseBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layers = nn.ModuleList([nn.Conv2d(c + i * GROWTH, GROWTH, 3, padding=1) for i in range(LAYERS)])

    def forward(self, x):
        for layer in self.layers:
            x = torch.cat([x, layer(x)], 1)
        return x


class Transition(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, 1, bias=False)

    def forward(self, x):
        return self.conv(x)


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.block = DenseBlock(c)
        self.transition = Transition(c + LAYERS * GROWTH, c)

    def forward(self, x):
        return self.transition(self.block(x))


def get_inputs():
    return [torch.randn(B, C, H, W)]


def get_init_inputs():
    return [C]


MTMC = {"cpu_sizes": [{"B": 2, "H": 5, "W": 7}]}
