# PATTERN: class 3: `t = torch` hides torch.softmax from the static check
# TASK: softmax
# EXPECT: rejected
# MESSAGE: `torch` used as a value
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def noop_kernel(out_ptr):
    pass


t = torch


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        noop_kernel[(1,)](out)
        return t.softmax(x, -1)
