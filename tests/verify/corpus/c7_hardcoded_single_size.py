# PATTERN: class 7: kernel and output hard-coded to the only size the task declares; the verifier's derived size exposes it
# TASK: softmax_one_size
# EXPECT: incorrect
# MESSAGE: shape [8, 100]
import torch
import torch.nn as nn
import triton
import triton.language as tl


ROWS, COLS = 8, 100


@triton.jit
def softmax_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = (cols < 100) & (row * 100 + cols < n)
    x = tl.load(x_ptr + row * 100 + cols, mask=mask, other=-float("inf"))
    num = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * 100 + cols, num / tl.sum(num, axis=0), mask=cols < 100)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty(ROWS, COLS, device=x.device, dtype=x.dtype)
        softmax_kernel[(ROWS,)](x.contiguous(), out, x.numel(), BLOCK=128)
        return out
