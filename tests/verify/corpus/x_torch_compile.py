# PATTERN: S1 torch.compile writes the kernels
# TASK: softmax
# EXPECT: rejected
# MESSAGE: torch.compile
import torch
import torch.nn as nn


@torch.compile
def fused(x):
    return x


class ModelNew(nn.Module):
    def forward(self, x):
        return fused(x)
