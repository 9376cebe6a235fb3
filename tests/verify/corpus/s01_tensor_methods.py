# PATTERN: S1 tensor methods compute outside any kernel
# TASK: softmax
# EXPECT: rejected
# MESSAGE: `.exp()` is PyTorch compute
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        e = (x - x.amax(dim=-1, keepdim=True)).exp()
        return e / e.sum(dim=-1, keepdim=True)
