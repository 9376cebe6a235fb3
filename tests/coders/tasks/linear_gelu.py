"""Linear layer with a GELU and a residual epilogue on a 3-D input."""
import torch
import torch.nn as nn
import torch.nn.functional as F

B, S, D, H = 8, 128, 1024, 1024


class Model(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.fc = nn.Linear(d, h)

    def forward(self, x, residual):
        return F.gelu(self.fc(x)) * 0.5 + residual


def get_inputs():
    return [torch.randn(B, S, D), torch.randn(B, S, H)]


def get_init_inputs():
    return [D, H]


MTMC = {"cpu_sizes": [{"B": 2, "S": 5, "D": 48, "H": 40}, {"B": 1, "S": 33, "D": 70, "H": 17}]}
