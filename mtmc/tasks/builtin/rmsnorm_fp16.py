"""RMSNorm of fp16 activations computed in fp32 (Llama style), written out op by op."""

import torch
import torch.nn as nn

# ~3.2 ms eager on H100: float, pow, mean, mul, cast, mul move ~9.7 GB (x is 0.54 GB in fp16)
# measured (one H100, torch 2.11, median of 8): 3.96 ms; 3.75 ms at the gpu_sizes shape
batch = 16
seq = 2048
hidden = 8192
dtype = torch.float16


class Model(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(hidden, dtype=dtype))
        self.eps = 1e-6

    def forward(self, x):
        xf = x.float()
        variance = xf.pow(2).mean(dim=-1, keepdim=True)
        normed = xf * torch.rsqrt(variance + self.eps)
        return normed.to(x.dtype) * self.weight


def get_inputs():
    # per-row scale: normalization must use each row's own RMS
    x = torch.randn(batch, seq, hidden, dtype=dtype)
    return [x.mul_((0.5 + 3 * torch.rand(batch, seq, 1)).to(dtype))]


def get_init_inputs():
    return [hidden]


MTMC = {
    "family": "norm",
    "split": "eval",
    "cpu_sizes": [{"batch": 2, "seq": 7, "hidden": 129}, {"batch": 3, "seq": 5, "hidden": 1021}],
    "gpu_sizes": [{"batch": 15, "seq": 2047, "hidden": 8191}],
}
