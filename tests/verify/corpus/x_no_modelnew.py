# PATTERN: contract: no ModelNew defined
# TASK: softmax
# EXPECT: rejected
# MESSAGE: no top-level `class ModelNew
import torch.nn as nn


class Model2(nn.Module):
    def forward(self, x):
        return x
