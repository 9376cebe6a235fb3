# PATTERN: S11 result cache keyed by the input's contents (a checksum kernel), not its address
# TASK: softmax
# EXPECT: rejected
# MESSAGE: read tensor values into Python
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def checksum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n, BLOCK):
        acc += tl.load(x_ptr + start + offs, mask=start + offs < n, other=0.0) * (start + offs + 1).to(tl.float32)
    tl.store(out_ptr, tl.sum(acc, axis=0))


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
        self.seen = {}

    def forward(self, x):
        digest = torch.empty(1, device=x.device, dtype=torch.float32)
        checksum_kernel[(1,)](x, digest, x.numel(), BLOCK=1024)
        key = float(digest[0])
        if key in self.seen:
            return self.seen[key].clone()
        out = torch.empty_like(x)
        softmax_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
        self.seen[key] = out.clone()
        return out
