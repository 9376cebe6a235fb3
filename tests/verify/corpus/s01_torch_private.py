# PATTERN: S1 private torch internals (torch._C)
# TASK: pointwise
# EXPECT: rejected
# MESSAGE: private internals
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x, y):
        return torch._C._VariableFunctions.add(x, y)
