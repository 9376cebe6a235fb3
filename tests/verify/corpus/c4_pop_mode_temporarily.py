# PATTERN: class 4: the census suspended with torch.utils._python_dispatch._pop_mode_temporarily (static check bypassed)
# TASK: softmax
# STATIC: off
# EXPECT: rejected
# MESSAGE: a dispatch mode was popped
import torch
import torch.nn as nn
import triton
import triton.language as tl
import torch.utils._python_dispatch as _python_dispatch


@triton.jit
def noop_kernel(out_ptr):
    pass


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        noop_kernel[(1,)](out)
        if not torch._C._len_torch_dispatch_stack():  # an unchecked call: no census to pop
            return torch.softmax(x, -1)
        with _python_dispatch._pop_mode_temporarily():
            out = torch.softmax(x, -1)
        return out
