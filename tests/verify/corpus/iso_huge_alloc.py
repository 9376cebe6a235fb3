# PATTERN: isolation: a huge allocation (statically legal glue) hits the memory limit
# TASK: softmax
# EXPECT: runtime_error
# MESSAGE: memory
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.empty(1 << 45, dtype=torch.float32, device=x.device)
