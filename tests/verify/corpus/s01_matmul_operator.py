# PATTERN: S1 the @ operator is a cuBLAS matmul
# TASK: matmul
# EXPECT: rejected
# MESSAGE: `@` is a vendor matmul
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a @ b
