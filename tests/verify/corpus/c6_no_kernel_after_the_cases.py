# PATTERN: class 6: its Triton kernel in the checked cases, no work at all in the forwards the verifier makes after them (the state check's; on a GPU the profiled and timed ones), found by its callers' frames (static check bypassed)
# TASK: softmax
# STATIC: off
# EXPECT: rejected
# MESSAGE: after the checked cases (state check, profile, timing) launched none of the candidate's Triton kernels
import sys

import torch
import torch.nn as nn
import triton
import triton.language as tl

AFTER_THE_CASES = {"_state_changes", "_gpu_measurements", "triton_share", "time_calls"}


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + cols, num / tl.sum(num, axis=0), mask=mask)


def after_the_cases() -> bool:
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name in AFTER_THE_CASES:
            return True
        frame = frame.f_back
    return False


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        if after_the_cases():  # unchecked calls: skip the work
            return out
        softmax_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        return out
