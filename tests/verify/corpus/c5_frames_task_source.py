# PATTERN: class 5 at runtime: the task's source is gone from the harness's frames, so rebuilding the reference from it fails (static check bypassed)
# TASK: softmax
# STATIC: off
# EXPECT: runtime_error
# MESSAGE: no task source in the harness's frames
import sys

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + cols, num / tl.sum(num, axis=0), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        frame = sys._getframe(1)
        while frame is not None:
            for value in frame.f_locals.values():
                if isinstance(value, dict) and "task_source" in value:
                    return torch.zeros_like(x)
            frame = frame.f_back
        raise RuntimeError("no task source in the harness's frames")
