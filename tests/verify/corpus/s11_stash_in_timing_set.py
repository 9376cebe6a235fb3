# PATTERN: S11 result stashed in the timing inputs: once the profile shows the timing stage has begun (an input object seen twice), the untimed calls write their answer into their input, and every later call copies its input out; the timing loop restored its buffers from the very sets the untimed calls were handed, so the timed outputs were the untimed ones, bitwise
# TASK: softmax
# BACKEND: gpu
# EXPECT: rejected
# MESSAGE: returned something other than the untimed call
import torch
import torch.nn as nn
import triton
import triton.language as tl

PROFILE_CALLS_LEFT, TIMING_SETS = 1, 3  # after the repeat: the profile's last call, then the untimed calls


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * n_cols + cols, num / tl.sum(num, axis=0), mask=mask)


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.since_repeat = -1  # calls since an input object came back (the profile): -1 before

    def forward(self, x):
        out = torch.empty_like(x)
        if self.since_repeat < 0 and hasattr(x, "seen"):
            self.since_repeat = 0
        elif self.since_repeat >= 0:
            self.since_repeat += 1
        x.seen = True
        grid = (triton.cdiv(x.numel(), 1024),)
        if self.since_repeat > PROFILE_CALLS_LEFT + TIMING_SETS:  # timed: the answer waits in the buffer
            copy_kernel[grid](x, out, x.numel(), BLOCK=1024)
            return out
        softmax_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        if self.since_repeat > PROFILE_CALLS_LEFT:  # an untimed call: leave the answer in its input
            copy_kernel[grid](out, x, x.numel(), BLOCK=1024)
        return out
