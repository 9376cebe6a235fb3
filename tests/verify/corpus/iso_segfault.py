# PATTERN: isolation: segmentation fault through a null pointer
# TASK: softmax
# STATIC: off
# EXPECT: crash
# MESSAGE: SIGSEGV
import ctypes

import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        ctypes.memset(8, 0, 64)  # write to address 8
        return x
