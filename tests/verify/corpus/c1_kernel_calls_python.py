# PATTERN: class 1: under the interpreter a kernel body is Python: it calls a plain helper that computes with torch
# TASK: softmax
# EXPECT: rejected
# MESSAGE: kernel `copy_kernel` calls `helper`
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
