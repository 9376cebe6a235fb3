"""Linear layer y = x W^T + b in bf16 (Llama-MLP-sized projection)."""

import torch
import torch.nn as nn

# ~2.5 ms eager on H100: 1.48 TFLOP at ~600 TFLOP/s
# measured (one H100, torch 2.11, median of 8): 1.91 ms; 11.86 ms at the gpu_sizes shape
batch = 16384
in_features = 4096
out_features = 11008
dtype = torch.bfloat16


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = nn.Linear(in_features, out_features, dtype=dtype)
        nn.init.normal_(self.fc.bias, std=0.5)  # as large as the matmul part, so it cannot be dropped

    def forward(self, x):
        return self.fc(x)


def get_inputs():
    return [torch.randn(batch, in_features, dtype=dtype)]


def get_init_inputs():
    return [in_features, out_features]


MTMC = {
    "family": "matmul",
    "split": "eval",
    # the Triton interpreter cannot do bf16 arithmetic: check the logic in fp16 on the CPU
    "cpu_sizes": [{"batch": 61, "in_features": 83, "out_features": 37, "dtype": torch.float16},
                  {"batch": 29, "in_features": 45, "out_features": 91, "dtype": torch.float16}],
    "gpu_sizes": [{"batch": 16381, "in_features": 4093, "out_features": 11001}],
}
