# PATTERN: S20 __import__ around the import allow-list
# TASK: softmax
# EXPECT: rejected
# MESSAGE: __import__
import torch.nn as nn

os = __import__("os")


class ModelNew(nn.Module):
    def forward(self, x):
        return x
