# PATTERN: isolation: out-of-bounds store far past the output (interpreter: segfault; GPU: a CUDA
# error such as an illegal address or, seen on an H100, 'operation not supported on global/shared
# address space')
# TASK: softmax
# EXPECT: crash
# EXPECT-GPU: runtime_error
# MESSAGE: SIG
# MESSAGE-GPU: CUDA error
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def wild_store_kernel(out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK) + (1 << 30)
    tl.store(out_ptr + offs, tl.zeros([BLOCK], tl.float32))


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        wild_store_kernel[(1,)](out, BLOCK=16)
        return out
