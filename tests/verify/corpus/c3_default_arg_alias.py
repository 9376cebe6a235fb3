# PATTERN: class 3: torch passed in as a default argument, then called through it
# TASK: softmax
# EXPECT: rejected
# MESSAGE: `torch.nn.functional` used as a value
import torch
import torch.nn as nn
import triton
import triton.language as tl
import torch.nn.functional as F


@triton.jit
def noop_kernel(out_ptr):
    pass


def compute(x, lib=F):
    return lib.softmax(x, -1)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        noop_kernel[(1,)](out)
        return compute(x)
