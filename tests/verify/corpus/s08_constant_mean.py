# PATTERN: S8 constant output equal to the reference mean (1/n for a softmax)
# TASK: softmax
# EXPECT: incorrect
# MESSAGE: output is constant
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def mean_kernel(out_ptr, n, n_cols, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros([BLOCK], tl.float32) + 1.0 / n_cols, mask=offs < n)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        mean_kernel[(triton.cdiv(x.numel(), 256),)](out, x.numel(), x.shape[1], BLOCK=256)
        return out
