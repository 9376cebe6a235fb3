"""Square fp32 matrix multiplication C = A @ B."""

import torch
import torch.nn as nn

# ~2.7 ms eager on H100: 137 GFLOP at ~50 TFLOP/s (fp32, TF32 off)
# measured (one H100, torch 2.11, median of 8): 2.69 ms; 2.99 ms at the gpu_sizes shape
M = 4096
N = 4096
K = 4096


class Model(nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []


MTMC = {
    "family": "matmul",
    "split": "train",
    "cpu_sizes": [{"M": 67, "N": 45, "K": 83}, {"M": 33, "N": 95, "K": 29}],
    "gpu_sizes": [{"M": 4093, "N": 4099, "K": 4091}],
}
