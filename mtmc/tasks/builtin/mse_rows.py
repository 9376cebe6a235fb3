"""Per-row mean squared error between two fp32 tensors (mse_loss reduction="none", mean over dim 1)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

# ~1.4 ms eager on H100: mse (read 2, write 1) + mean (read 1) = 4 passes over 1.07 GB
# measured (one H100, torch 2.11, median of 8): 1.44 ms; 1.42 ms at the gpu_sizes shape
batch = 16384
dim = 16384


class Model(nn.Module):
    def forward(self, pred, target):
        return F.mse_loss(pred, target, reduction="none").mean(dim=1)


def get_inputs():
    # per-row noise level: with equal-variance inputs every row's error would be ~2
    pred = torch.randn(batch, dim)
    target = torch.randn(batch, dim).mul_(0.5 + 2 * torch.rand(batch, 1))
    return [pred, target]


def get_init_inputs():
    return []


MTMC = {
    "family": "loss",
    "split": "train",
    "cpu_sizes": [{"batch": 37, "dim": 129}, {"batch": 7, "dim": 2039}],
    "gpu_sizes": [{"batch": 16381, "dim": 16381}],
}
