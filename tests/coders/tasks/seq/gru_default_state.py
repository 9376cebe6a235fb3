"""A GRU whose forward takes an optional initial state (`h0=None`) that the task's inputs leave out:
the trace takes the default, so the forward's `if h0 is None` branch builds zeros."""
import torch
import torch.nn as nn

B, T, F, H, L = 4, 6, 12, 20, 2


class Model(nn.Module):
    def __init__(self, features, hidden, layers):
        super().__init__()
        self.layers, self.hidden = layers, hidden
        self.gru = nn.GRU(features, hidden, layers, batch_first=True)
        self.fc = nn.Linear(hidden, 3)

    def forward(self, x, h0=None):
        if h0 is None:
            h0 = torch.zeros(self.layers, x.size(0), self.hidden, device=x.device)
        out, _ = self.gru(x, h0)
        return self.fc(out[:, -1, :])


def get_inputs():
    return [torch.rand(B, T, F)]


def get_init_inputs():
    return [F, H, L]


MTMC = {"cpu_sizes": [{"B": 3, "T": 5, "F": 7, "H": 17, "L": 2}]}
