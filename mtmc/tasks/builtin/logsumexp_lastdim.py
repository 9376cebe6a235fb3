"""Row-wise logsumexp over the last dimension of a 2-D fp32 tensor."""

import torch
import torch.nn as nn

# ~4.3 ms eager on H100: eager logsumexp is amax + sub + exp + sum = 6 passes over 2.15 GB
# measured (one H100, torch 2.11, median of 8): 4.57 ms; 4.62 ms at the gpu_sizes shape
rows = 16384
cols = 32768


class Model(nn.Module):
    def forward(self, x):
        return torch.logsumexp(x, dim=-1)


def get_inputs():
    # per-row temperature and offset: with plain randn every row's logsumexp is ~log(cols) + 0.5
    x = torch.randn(rows, cols)
    return [x.mul_(0.5 + 2 * torch.rand(rows, 1)).add_(torch.randn(rows, 1) * 3)]


def get_init_inputs():
    return []


MTMC = {
    "family": "softmax",
    "split": "eval",
    "cpu_sizes": [{"rows": 37, "cols": 257}, {"rows": 9, "cols": 1999}],
    "gpu_sizes": [{"rows": 16381, "cols": 32771}],
}
