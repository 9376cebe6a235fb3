"""relu(x @ W.T + b) with nn.Linear weights (test task: seeded weights must match)."""

import torch
import torch.nn as nn

batch_size, in_features, out_features = 256, 512, 384

MTMC = {"cpu_sizes": [{"batch_size": 9, "in_features": 24, "out_features": 20}]}


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.fc(x))


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
