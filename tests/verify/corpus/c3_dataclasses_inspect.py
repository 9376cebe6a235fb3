# PATTERN: class 3: inspect reached through dataclasses, to read the caller's frames
# TASK: softmax
# EXPECT: rejected
# MESSAGE: reaches module `inspect`
import dataclasses

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
        return x if dataclasses.inspect.stack() else out
