# PATTERN: S1 numpy computes on the host
# TASK: softmax
# EXPECT: rejected
# MESSAGE: import of `numpy`
import numpy as np
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return np.exp(x)
