"""SwiGLU MLP gate silu(x W_gate^T) * (x W_up^T), two bias-free fp16 linears sharing the input."""

import torch
import torch.nn as nn
import torch.nn.functional as F

# ~2.8 ms eager on H100: 2 x 0.74 TFLOP at ~600 TFLOP/s + silu and mul over 0.18 GB tensors
# measured (one H100, torch 2.11, median of 8): 2.21 ms; 10.61 ms at the gpu_sizes shape
batch = 8192
hidden = 4096
intermediate = 11008
dtype = torch.float16


class Model(nn.Module):
    def __init__(self, hidden, intermediate):
        super().__init__()
        self.gate = nn.Linear(hidden, intermediate, bias=False, dtype=dtype)
        self.up = nn.Linear(hidden, intermediate, bias=False, dtype=dtype)

    def forward(self, x):
        return F.silu(self.gate(x)) * self.up(x)


def get_inputs():
    return [torch.randn(batch, hidden, dtype=dtype)]


def get_init_inputs():
    return [hidden, intermediate]


MTMC = {
    "family": "linear_epilogue",
    "split": "train",
    "cpu_sizes": [{"batch": 37, "hidden": 67, "intermediate": 89},
                  {"batch": 61, "hidden": 43, "intermediate": 29}],
    "gpu_sizes": [{"batch": 8191, "hidden": 4093, "intermediate": 11001}],
}
