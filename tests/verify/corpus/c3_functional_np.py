# PATTERN: class 3: numpy reached as torch.nn.functional.np
# TASK: softmax
# EXPECT: rejected
# MESSAGE: reaches module `numpy`
import torch
import torch.nn as nn
import triton
import triton.language as tl
import torch.nn.functional as F


@triton.jit
def noop_kernel(out_ptr):
    pass


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        noop_kernel[(1,)](out)
        return torch.as_tensor(F.np.exp(x))
