# PATTERN: class 1: a triton.heuristics lambda computes the answer on the host during the launch; the kernel does nothing
# TASK: softmax
# EXPECT: rejected
# MESSAGE: may only do integer arithmetic
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.heuristics({"BLOCK": lambda args: (args["out_ptr"].copy_(args["x_ptr"].softmax(-1)), 128)[1]})
@triton.jit
def copy_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pass


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        copy_kernel[(1,)](x, out, x.numel())
        return out
