"""A two-layer bidirectional LSTM, batch first, with its initial state given; returns the output
sequence and both final states (the forms of KernelBench level 3's LSTM tasks together)."""
import torch
import torch.nn as nn

B, T, F, H, L = 10, 64, 32, 48, 2


class Model(nn.Module):
    def __init__(self, features, hidden, layers):
        super().__init__()
        self.lstm = nn.LSTM(features, hidden, layers, batch_first=True, bidirectional=True)
        self.fc = nn.Linear(2 * hidden, 5)

    def forward(self, x, h0, c0):
        out, (h_n, c_n) = self.lstm(x, (h0, c0))
        return self.fc(out[:, -1, :]), h_n, c_n


def get_inputs():
    return [torch.rand(B, T, F), torch.rand(2 * L, B, H), torch.rand(2 * L, B, H)]


def get_init_inputs():
    return [F, H, L]


MTMC = {"cpu_sizes": [{"B": 3, "T": 4, "F": 7, "H": 17, "L": 2}]}
