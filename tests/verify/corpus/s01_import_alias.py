# PATTERN: S1 vendor matmul hidden behind an import alias
# TASK: matmul
# EXPECT: rejected
# MESSAGE: torch.matmul
import torch
import torch.nn as nn
from torch import matmul as fast_product


class ModelNew(nn.Module):
    def forward(self, a, b):
        return fast_product(a, b)
