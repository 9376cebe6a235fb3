# PATTERN: class 1 at runtime: the grid function computes the answer inside the launch (static check bypassed; on a GPU the device profile sees PyTorch's softmax kernel)
# TASK: softmax
# STATIC: off
# EXPECT: rejected
# MESSAGE: aten._softmax
# EXPECT-GPU: rejected
# MESSAGE-GPU: device kernels other than the candidate's
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
        noop_kernel[lambda meta: (out.copy_(x.softmax(-1)), 1)[1:]](out)
        return out
