"""Tall-skinny fp32 matmul: a very tall A with few columns times a small B."""

import torch
import torch.nn as nn

# ~1.4 ms eager on H100: 69 GFLOP at ~50 TFLOP/s (A 0.27 GB + C 1.07 GB of traffic: ~0.45 ms)
# measured (one H100, torch 2.11, median of 8): 1.84 ms; 2.39 ms at the gpu_sizes shape
M = 524288
K = 128
N = 512


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
    # M stays much larger than K and N here too; few programs, so still cheap in the interpreter
    "cpu_sizes": [{"M": 383, "K": 13, "N": 37}, {"M": 509, "K": 29, "N": 19}],
    "gpu_sizes": [{"M": 524287, "K": 127, "N": 509}],
}
