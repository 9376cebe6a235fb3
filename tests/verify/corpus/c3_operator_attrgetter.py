# PATTERN: class 3: typing.operator.attrgetter fetches torch.softmax by a string
# TASK: softmax
# EXPECT: rejected
# MESSAGE: reaches module `operator`
import typing

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
        return typing.operator.attrgetter('soft' + 'max')(torch)(x, -1)
