# PATTERN: S1 reaching aten kernels through torch.ops
# TASK: matmul
# EXPECT: rejected
# MESSAGE: torch.ops
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        return torch.ops.aten.mm.default(a, b)
