# PATTERN: S21/S7 an input mutation mirrored into the verifier's pristine inputs: the kernel leaves each row of its input shifted by its max (a softmax's output does not change) and copies the result over the verifier's own copy of the case's inputs, found through the harness's frames (static check bypassed), so that the copy it was handed still compared equal to it after the call. Ok before verifier 2.8, whose inputs after a call are held to the reference's, not to that copy
# TASK: softmax
# STATIC: off
# EXPECT: rejected
# MESSAGE: a call received inputs other than the reference's
import sys

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_shift_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    shifted = x - tl.max(x, axis=0)
    num = tl.exp(shifted)
    tl.store(out_ptr + row * n_cols + cols, num / tl.sum(num, axis=0), mask=mask)
    tl.store(x_ptr + row * n_cols + cols, shifted, mask=mask)  # the mutation (S7)


def mirror(x: torch.Tensor) -> None:
    """The verifier's own copy of this call's case inputs made equal to the changed one."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_name != "_call":
        frame = frame.f_back
    if frame is not None:
        frame.f_locals["case"]["inputs"][0].copy_(x)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        softmax_shift_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        mirror(x)
        return out
