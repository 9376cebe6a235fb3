# PATTERN: class 2: the answer is computed on a thread started and joined inside forward, where the census (a per-thread dispatch mode) cannot see (static check bypassed)
# TASK: softmax
# STATIC: off
# EXPECT: rejected
# MESSAGE: thread(s): work on another thread
import threading

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def noop_kernel(out_ptr):
    pass


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        out = torch.empty_like(x)
        noop_kernel[(1,)](out)
        worker = threading.Thread(target=lambda: out.copy_(torch.softmax(x, -1)))
        worker.start()
        worker.join()
        return out
