"""Reverse and exclusive cumulative sums, spelled as KernelBench writes them (flip around the
cumsum; a cat of zeros and the cumsum of all but the last position), over a middle dim (column
scans) and over the last dim (row scans)."""
import torch
import torch.nn as nn

B, R, N = 16, 300, 128


class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x, y):
        reverse = torch.cumsum(x.flip(self.dim), dim=self.dim).flip(self.dim)
        part = torch.cumsum(y.narrow(dim=-1, start=0, length=y.size(-1) - 1), dim=-1)
        exclusive = torch.cat((torch.zeros_like(y.select(-1, 0).unsqueeze(-1)), part), dim=-1)
        backwards_rows = torch.cumsum(y.flip(-1), -1).flip(-1)
        return reverse, exclusive, backwards_rows


def get_inputs():
    return [torch.randn(B, R, N), torch.randn(B, R, N)]


def get_init_inputs():
    return [1]


MTMC = {"cpu_sizes": [{"B": 2, "R": 11, "N": 19}, {"B": 1, "R": 3, "N": 40}]}
