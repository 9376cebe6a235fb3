# PATTERN: class 5: a generator's frame links walk up into the harness's frames
# TASK: softmax
# EXPECT: rejected
# MESSAGE: frame and code internals
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
        return x if (lambda: (yield))().gi_frame.f_back else out
