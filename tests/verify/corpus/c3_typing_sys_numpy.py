# PATTERN: class 3: numpy reached through typing.sys.modules
# TASK: softmax
# EXPECT: rejected
# MESSAGE: reaches module `sys`
import typing

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def noop_kernel(out_ptr):
    pass


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        noop_kernel[(1,)](out)
        return typing.sys.modules['numpy'].exp(x)
