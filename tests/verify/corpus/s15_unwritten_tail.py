# PATTERN: S15 part of the output never written (grid one row short): poisoned memory shows NaN
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
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + cols, num / tl.sum(num, axis=0), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        softmax_kernel[(x.shape[0] - 1,)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        return out
