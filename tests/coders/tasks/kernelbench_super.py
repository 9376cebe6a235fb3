"""A KernelBench-style file as written upstream: `super(Model, self).__init__()`, no MTMC sizes."""
import torch
import torch.nn as nn

batch_size = 16
in_features = 40
out_features = 24


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x)) * 2.0


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
