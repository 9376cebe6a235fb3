# PATTERN: class 4: launch counts forged through gc, no kernel at all (static check bypassed)
# TASK: softmax
# STATIC: off
# EXPECT: rejected
# MESSAGE: launches were forged
import gc

import torch
import torch.nn as nn
import triton
import triton.language as tl


COUNTERS = [o for o in gc.get_objects() if type(o).__name__ == "LaunchCounter"]


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        for counter in COUNTERS:
            counter.kernels["softmax_kernel"] += 1
        return torch.softmax(x, -1)
