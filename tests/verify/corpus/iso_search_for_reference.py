# PATTERN: S16/S19 at runtime: search the process for the expected outputs (static check bypassed).
# The reference outputs never exist in the candidate's process, so there is nothing to find.
# TASK: softmax
# STATIC: off
# EXPECT: incorrect
# MESSAGE: output is constant
import gc
import glob
import inspect

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fill_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros([BLOCK], tl.float32), mask=offs < n)


def steal(x):
    for frame in inspect.stack():
        for name, value in frame.frame.f_locals.items():
            if "expect" in name and isinstance(value, list):
                return value
    for obj in gc.get_objects():
        if isinstance(obj, dict) and "expected" in obj:
            return obj["expected"]
    for path in glob.glob("../**/*expected*", recursive=True):
        return torch.load(path)
    return None


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        fill_kernel[(1,)](out, x.numel(), BLOCK=triton.next_power_of_2(x.numel()))
        stolen = steal(x)
        return stolen if isinstance(stolen, torch.Tensor) else out
