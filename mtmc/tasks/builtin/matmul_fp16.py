"""Square fp16 matrix multiplication C = A @ B."""

import torch
import torch.nn as nn

# ~1.8 ms eager on H100: 1.1 TFLOP at ~600 TFLOP/s
# measured (one H100, torch 2.11, median of 8): 1.44 ms; 7.39 ms at the gpu_sizes shape
M = 8192
N = 8192
K = 8192
dtype = torch.float16


class Model(nn.Module):
    def forward(self, a, b):
        return torch.matmul(a, b)


def get_inputs():
    # B scaled by 1/sqrt(K) keeps C ~ N(0, 1), well inside fp16 range
    return [torch.randn(M, K, dtype=dtype), torch.randn(K, N, dtype=dtype) * K ** -0.5]


def get_init_inputs():
    return []


MTMC = {
    "family": "matmul",
    "split": "train",
    "cpu_sizes": [{"M": 61, "N": 37, "K": 89}, {"M": 29, "N": 83, "K": 47}],
    "gpu_sizes": [{"M": 8191, "N": 8189, "K": 8179}],
}
