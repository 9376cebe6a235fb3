# PATTERN: isolation: infinite loop in forward (statically legal)
# TASK: softmax
# EXPECT: timeout
# MESSAGE: limit
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        while True:
            pass
