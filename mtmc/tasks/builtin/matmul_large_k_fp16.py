"""fp16 matmul with a long reduction dimension (K >> M, N): the split-K shape."""

import torch
import torch.nn as nn

# ~1.8 ms eager on H100: 1.1 TFLOP at ~600 TFLOP/s (A and B are 0.54 GB each)
# measured (one H100, torch 2.11, median of 8): 1.36 ms; 7.65 ms at the gpu_sizes shape
M = 2048
N = 2048
K = 131072
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
    "split": "eval",
    # K stays much larger than M and N here too
    "cpu_sizes": [{"M": 37, "N": 29, "K": 509}, {"M": 19, "N": 41, "K": 383}],
    "gpu_sizes": [{"M": 2047, "N": 2053, "K": 131071}],
}
