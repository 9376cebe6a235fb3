# PATTERN: class 2: threading imported through an attribute chain of an allowed module
# TASK: softmax
# EXPECT: rejected
# MESSAGE: reaches module `importlib`
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
        worker = F.importlib.import_module('threading').Thread(target=lambda: out.copy_(torch.softmax(x, -1)))
        worker.start()
        worker.join()
        return out
