# PATTERN: isolation: the candidate aborts its process
# TASK: softmax
# STATIC: off
# EXPECT: crash
# MESSAGE: SIGABRT
import os

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        os.abort()
