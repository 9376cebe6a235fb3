# PATTERN: S22 the host copy the main process judges rewritten after its call: a cheap constant on every call, and on a case's repeat its true softmax written into the harness's host copy of the case's first outputs, found through the harness's frames (static check bypassed); the repeats equal the first call, so only the copy judged against the reference changed. On a GPU the same lets the timed calls skip their work where the untimed outputs' copy is fixed up late. Ok before verifier 2.9, whose main process holds every output that came back to the digest taken right after its call
# TASK: softmax
# STATIC: off
# EXPECT: rejected
# MESSAGE: its outputs that came back are not those its call returned
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


@triton.jit
def uniform_kernel(out_ptr, n, value, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.zeros([BLOCK], dtype=tl.float32) + value, mask=offs < n)


def judged_copy():
    """The harness's host copy of this case's first outputs, when this call is a repeat of it."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_name != "_run_schedule":
        frame = frame.f_back
    if frame is None:
        return None
    report = frame.f_locals["reports"].get(frame.f_locals["index"])
    return None if report is None else report["outputs"][0]


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        rows, cols = x.shape
        out = torch.empty_like(x)
        uniform_kernel[(triton.cdiv(out.numel(), 1024),)](out, out.numel(), 1.0 / cols, BLOCK=1024)
        judged = judged_copy()
        if judged is not None:
            true = torch.empty_like(x)
            softmax_kernel[(rows,)](x, true, cols, BLOCK=triton.next_power_of_2(cols))
            judged.copy_(true)
        return out
