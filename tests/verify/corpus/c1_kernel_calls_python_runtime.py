# PATTERN: class 1 at runtime: the kernel body's helper runs torch compute, which the census now sees (static check bypassed; on an H100 the launch fails: "Unsupported function referenced")
# TASK: softmax
# STATIC: off
# EXPECT: rejected
# MESSAGE: aten._softmax
# EXPECT-GPU: runtime_error
# MESSAGE-GPU: Unsupported function referenced
import torch
import torch.nn as nn
import triton
import triton.language as tl


STASH = {}


def helper(value):
    STASH["out"].copy_(STASH["x"].softmax(-1))
    return value


@triton.jit
def copy_kernel(out_ptr):
    pid = helper(tl.program_id(0))
    tl.store(out_ptr + pid, tl.load(out_ptr + pid))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        STASH["x"], STASH["out"] = x, out
        copy_kernel[(1,)](out)
        STASH.clear()
        return out
