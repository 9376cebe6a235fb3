# PATTERN: class 4: the census popped off torch's dispatch stack with a private API, compute, pushed back (static check bypassed)
# TASK: softmax
# STATIC: off
# EXPECT: rejected
# MESSAGE: a dispatch mode was popped
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
        noop_kernel[(1,)](out)
        if not torch._C._len_torch_dispatch_stack():  # an unchecked call: no census to pop
            return torch.softmax(x, -1)
        mode = torch._C._pop_torch_dispatch_stack(None)
        out = torch.softmax(x, -1)
        torch._C._push_on_torch_dispatch_stack(mode)
        return out
