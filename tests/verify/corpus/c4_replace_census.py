# PATTERN: class 4: the census's __torch_dispatch__ replaced through gc (static check bypassed)
# TASK: softmax
# STATIC: off
# EXPECT: rejected
# MESSAGE: replaced mtmc.verify.proof.OpCensus.__torch_dispatch__
import gc

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def noop_kernel(out_ptr):
    pass


for obj in gc.get_objects():
    if isinstance(obj, type) and obj.__name__ == "OpCensus":
        obj.__torch_dispatch__ = lambda self, func, types, args=(), kwargs=None: func(*args, **(kwargs or {}))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        noop_kernel[(1,)](out)
        return torch.softmax(x, -1)
