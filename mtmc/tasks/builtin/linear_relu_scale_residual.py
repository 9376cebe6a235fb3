"""fp32 linear, ReLU, per-feature scale and residual add: relu(x W^T + b) * scale + residual."""

import torch
import torch.nn as nn

# ~2.9 ms eager on H100: 137 GFLOP at ~50 TFLOP/s + relu, mul, add over 67 MB tensors
# measured (one H100, torch 2.11, median of 8): 2.94 ms; 2.93 ms at the gpu_sizes shape
batch = 4096
in_features = 4096
out_features = 4096


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features)
        nn.init.normal_(self.fc.bias, std=0.5)
        self.scale = nn.Parameter(torch.randn(out_features))

    def forward(self, x, residual):
        return torch.relu(self.fc(x)) * self.scale + residual


def get_inputs():
    return [torch.randn(batch, in_features), torch.randn(batch, out_features)]


def get_init_inputs():
    return [in_features, out_features]


MTMC = {
    "family": "linear_epilogue",
    "split": "train",
    "cpu_sizes": [{"batch": 61, "in_features": 37, "out_features": 83},
                  {"batch": 29, "in_features": 89, "out_features": 43}],
    "gpu_sizes": [{"batch": 4093, "in_features": 4091, "out_features": 4099}],
}
