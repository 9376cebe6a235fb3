"""A bidirectional GRU without bias and without an initial state (zeros), whose h_n is returned."""
import torch
import torch.nn as nn

B, T, F, H = 10, 64, 32, 48


class Model(nn.Module):
    def __init__(self, features, hidden):
        super().__init__()
        self.gru = nn.GRU(features, hidden, 2, bias=False, bidirectional=True)

    def forward(self, x):
        _, h_n = self.gru(x)
        return h_n


def get_inputs():
    return [torch.rand(T, B, F)]


def get_init_inputs():
    return [F, H]


MTMC = {"cpu_sizes": [{"B": 3, "T": 4, "F": 9, "H": 17}]}
