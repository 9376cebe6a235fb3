"""Column means of a 2-D fp32 tensor: mean over the leading (strided) dimension."""

import torch
import torch.nn as nn

# ~1.4 ms eager on H100: one read of 4.3 GB
# measured (one H100, torch 2.11, median of 8): 1.42 ms; 1.64 ms at the gpu_sizes shape
rows = 65536
cols = 16384


class Model(nn.Module):
    def forward(self, x):
        return torch.mean(x, dim=0)


def get_inputs():
    # per-column offsets: the means are O(1), not O(1/sqrt(rows)) noise around zero
    return [torch.randn(rows, cols).add_(torch.randn(cols))]


def get_init_inputs():
    return []


MTMC = {
    "family": "reduction",
    "split": "train",
    "cpu_sizes": [{"rows": 257, "cols": 37}, {"rows": 1021, "cols": 13}],
    "gpu_sizes": [{"rows": 65519, "cols": 16383}],
}
