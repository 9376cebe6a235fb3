# PATTERN: S20 exec of a string the checker never saw
# TASK: softmax
# EXPECT: rejected
# MESSAGE: exec runs code
import torch.nn as nn

exec("import os")


class ModelNew(nn.Module):
    def forward(self, x):
        return x
