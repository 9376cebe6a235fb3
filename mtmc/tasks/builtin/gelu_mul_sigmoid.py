"""Gated pointwise product gelu(x) * sigmoid(y) of two fp32 tensors."""

import torch
import torch.nn as nn
import torch.nn.functional as F

# ~1.9 ms eager on H100: gelu (2) + sigmoid (2) + mul (3) = 7 passes over 0.81 GB
# measured (one H100, torch 2.11, median of 8): 1.90 ms; 1.92 ms at the gpu_sizes shape
rows = 12288
cols = 16384


class Model(nn.Module):
    def forward(self, x, y):
        return F.gelu(x) * torch.sigmoid(y)


def get_inputs():
    return [torch.randn(rows, cols) * 2, torch.randn(rows, cols) * 2]


def get_init_inputs():
    return []


MTMC = {
    "family": "pointwise",
    "split": "train",
    "cpu_sizes": [{"rows": 37, "cols": 129}, {"rows": 19, "cols": 1021}],
    "gpu_sizes": [{"rows": 12281, "cols": 16381}],
}
