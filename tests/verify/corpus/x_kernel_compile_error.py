# PATTERN: crash case: a Triton kernel that does not compile (non power-of-2 arange)
# TASK: softmax
# EXPECT: compile_error
# MESSAGE: power of 2
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def bad_kernel(x_ptr, out_ptr, n_cols):
    cols = tl.arange(0, 100)
    tl.store(out_ptr + cols, tl.load(x_ptr + cols))


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        bad_kernel[(x.shape[0],)](x, out, x.shape[1])
        return out
