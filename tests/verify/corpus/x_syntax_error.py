# PATTERN: crash case: syntax error
# TASK: softmax
# EXPECT: compile_error
# MESSAGE: syntax error
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x)
        return x
