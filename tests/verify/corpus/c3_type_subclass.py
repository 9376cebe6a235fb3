# PATTERN: class 3: a tensor subclass built with type(), invisible to the class rule
# TASK: softmax
# EXPECT: rejected
# MESSAGE: type() with bases
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
        return type('Lazy', (torch.Tensor,), {})(x)
