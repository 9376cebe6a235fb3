"""A masked cumulative sum over rows (KernelBench 93_masked_cumsum's form): the product with the mask
is a prologue of the scan."""
import torch
import torch.nn as nn

B, N = 128, 4000


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x, mask):
        return torch.cumsum(x * mask, dim=self.dim)


def get_inputs():
    x = torch.rand(B, N)
    return [x, torch.randint(0, 2, x.shape).bool()]


def get_init_inputs():
    return [1]


MTMC = {"cpu_sizes": [{"B": 3, "N": 45}, {"B": 2, "N": 9}]}
