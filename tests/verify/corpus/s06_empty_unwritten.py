# PATTERN: S6 torch.empty output never written (allocator reuse); NaN poisoning shows it
# TASK: softmax
# EXPECT: incorrect
# EXPECT-GPU: incorrect
# MESSAGE: output 0
# MESSAGE-GPU: NaN
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def touch_kernel(x_ptr, n_cols, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + cols, mask=cols < n_cols)


class ModelNew(nn.Module):
    def forward(self, x):
        touch_kernel[(1,)](x, x.shape[1], BLOCK=128)
        return torch.empty_like(x)
