# PATTERN: class 3 at runtime: the answer computed with numpy on the host (static check bypassed): moving the tensor to numpy is seen
# TASK: softmax
# STATIC: off
# EXPECT: rejected
# MESSAGE: Tensor.numpy() x
import numpy as np

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
        host = x.cpu().numpy()
        e = np.exp(host - host.max(axis=-1, keepdims=True))
        return torch.from_numpy(e / e.sum(axis=-1, keepdims=True)).to(x.device)
