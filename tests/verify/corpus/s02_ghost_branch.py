# PATTERN: S2 ghost branch: the kernel launches only on a branch never taken
# TASK: pointwise
# EXPECT: rejected
# MESSAGE: decoy kernel
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fused_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.sigmoid(x) * y + 2.0 * x, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x, y):
        if x.numel() > 10**12:
            out = torch.empty_like(x)
            fused_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, out, x.numel(), BLOCK=1024)
            return out
        return 2.0 * x + y * 0.5
