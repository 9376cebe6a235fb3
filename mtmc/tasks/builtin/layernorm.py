"""LayerNorm over the hidden dimension of fp32 activations, with a learned weight and bias."""

import torch
import torch.nn as nn

# ~1.4-2.1 ms eager on H100: 2-3 passes over 2.15 GB (stats, normalize, write)
# measured (one H100, torch 2.11, median of 8): 2.17 ms; 3.05 ms at the gpu_sizes shape
batch = 32
seq = 2048
hidden = 8192


class Model(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=1e-5)
        nn.init.normal_(self.norm.weight)  # non-trivial affine: ones/zeros would let it be skipped
        nn.init.normal_(self.norm.bias)

    def forward(self, x):
        return self.norm(x)


def get_inputs():
    # per-row scale and offset: normalization must use each row's own statistics
    x = torch.randn(batch, seq, hidden)
    return [x.mul_(0.5 + 2 * torch.rand(batch, seq, 1)).add_(torch.randn(batch, seq, 1) * 2)]


def get_init_inputs():
    return [hidden]


MTMC = {
    "family": "norm",
    "split": "train",
    "cpu_sizes": [{"batch": 2, "seq": 7, "hidden": 129}, {"batch": 3, "seq": 5, "hidden": 1021}],
    "gpu_sizes": [{"batch": 31, "seq": 2039, "hidden": 8191}],
}
