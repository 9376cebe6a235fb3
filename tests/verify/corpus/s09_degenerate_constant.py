# PATTERN: S9 degenerate task (softmax row sums are 1): a constant 1.0 kernel
# TASK: mean_softmax
# EXPECT: incorrect
# MESSAGE: output is constant
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def ones_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros([BLOCK], tl.float32) + 1.0, mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty(x.shape[0], device=x.device, dtype=x.dtype)
        ones_kernel[(1,)](out, x.shape[0], BLOCK=triton.next_power_of_2(x.shape[0]))
        return out
