# PATTERN: S1/S3 arithmetic operators on tensors (invisible to the AST): the census sees aten.mul
# TASK: pointwise
# EXPECT: rejected
# MESSAGE: aten.mul
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def finish_kernel(x_ptr, y_ptr, t_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    t = tl.load(t_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.sigmoid(x) * y + t, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x, y):
        t = 2.0 * x  # the lazy part: done by PyTorch
        out = torch.empty_like(x)
        finish_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, t, out, x.numel(), BLOCK=1024)
        return out
