# PATTERN: class 1: an autotune Config pre_hook computes the answer on the host
# TASK: softmax
# EXPECT: rejected
# MESSAGE: triton.Config pre_hook may only do integer arithmetic
import torch
import torch.nn as nn
import triton
import triton.language as tl


def fill(nargs):
    nargs["out_ptr"].copy_(nargs["x_ptr"].softmax(-1))


@triton.autotune(configs=[triton.Config({"BLOCK": 64}, pre_hook=fill), triton.Config({"BLOCK": 128}, pre_hook=fill)],
                 key=["n"])
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
