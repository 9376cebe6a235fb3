# PATTERN: class 1 at runtime: the heuristics lambda's softmax runs inside the launch, where the census used to look away (static check bypassed)
# TASK: softmax
# STATIC: off
# EXPECT: rejected
# MESSAGE: aten._softmax
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
