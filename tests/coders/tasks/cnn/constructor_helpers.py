"""A ResNet / DenseNet style constructor: a class attribute (`expansion`) and a method of Model
(`_make_layer`) it calls, and a helper module class whose constructor calls its own method."""
import torch
import torch.nn as nn

B, C, H, W = 4, 6, 16, 16


class Dense(nn.Module):
    def __init__(self, c, layers):
        super().__init__()
        self.layers = nn.ModuleList([self._make(c) for _ in range(layers)])

    def _make(self, c):
        return nn.Sequential(nn.BatchNorm2d(c), nn.ReLU(inplace=True), nn.Conv2d(c, c, 3, padding=1))

    def forward(self, x):
        for layer in self.layers:
            x = x + layer(x)
        return x


class Model(nn.Module):
    expansion = 2

    def __init__(self, c):
        super().__init__()
        self.stem = self._make_layer(c, c * self.expansion)
        self.dense = Dense(c * self.expansion, 2)

    def _make_layer(self, c_in, c_out):
        return nn.Sequential(nn.Conv2d(c_in, c_out, 1, bias=False), nn.BatchNorm2d(c_out))

    def forward(self, x):
        return self.dense(self.stem(x))


def get_inputs():
    return [torch.randn(B, C, H, W)]


def get_init_inputs():
    return [C]


MTMC = {"cpu_sizes": [{"B": 2, "H": 5, "W": 7}]}
