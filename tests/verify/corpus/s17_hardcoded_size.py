# PATTERN: S17 specialised to the first test size (hard-coded width; on a GPU the unwritten rest reads
# back as the poisoned NaN, exactly)
# TASK: softmax
# EXPECT: incorrect
# MESSAGE: max |out - ref| || NaN value(s)
# MESSAGE-GPU: NaN value(s)
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
        if x.shape[1] == 100:  # the size it was tuned on
            softmax_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=128)
        else:  # any other width: a block too narrow for the row
            softmax_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=32)
        return out
