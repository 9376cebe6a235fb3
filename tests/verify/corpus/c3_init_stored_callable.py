# PATTERN: class 3: __init__ stores torch.softmax, forward calls it through self
# TASK: softmax
# EXPECT: rejected
# MESSAGE: `torch.softmax` is PyTorch compute
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
        self.op = torch.softmax

    def forward(self, x):
        out = torch.empty_like(x)
        noop_kernel[(1,)](out)
        return self.op(x, -1)
