"""A three-layer GRU over a (T, B, F) sequence with h0 given, returning the output and h_n."""
import torch
import torch.nn as nn

B, T, F, H, L = 10, 64, 32, 48, 3


class Model(nn.Module):
    def __init__(self, features, hidden, layers):
        super().__init__()
        self.gru = nn.GRU(features, hidden, layers)

    def forward(self, x, h0):
        return self.gru(x, h0)


def get_inputs():
    return [torch.rand(T, B, F), torch.rand(L, B, H)]


def get_init_inputs():
    return [F, H, L]


MTMC = {"cpu_sizes": [{"B": 3, "T": 5, "F": 9, "H": 21, "L": 3}]}
