# PATTERN: crash case: the module raises while importing
# TASK: softmax
# EXPECT: compile_error
# MESSAGE: NameError
import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK = undefined_constant * 2


class ModelNew(nn.Module):
    def forward(self, x):
        return x
