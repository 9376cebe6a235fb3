"""einops.rearrange as Mamba2 uses it: a sequence cut into blocks of a fixed length (a composite
input axis and `...`), blocks moved behind the heads (a permute) and merged back (composite output
axes). The number of blocks follows the sequence length, so the reshapes read it at run time."""
import torch
import torch.nn as nn
from einops import rearrange

B, C, BLOCK, HEADS, D = 2, 3, 4, 3, 5


class Model(nn.Module):
    def __init__(self, block, heads, d):
        super().__init__()
        self.block = block
        self.proj = nn.Linear(heads * d, 7)

    def forward(self, x):
        blocks = rearrange(x, "b (c l) ... -> b c l ...", l=self.block)
        heads_first = rearrange(blocks, "b c l h d -> b h c l d")
        scaled = torch.exp(heads_first) * torch.cumsum(heads_first, dim=-2)
        return self.proj(rearrange(scaled, "b h c l d -> b (c l) (h d)"))


def get_inputs():
    return [torch.rand(B, C * BLOCK, HEADS, D)]


def get_init_inputs():
    return [BLOCK, HEADS, D]


# the block length is an int attribute of the module, a constant of the trace: it keeps its value
MTMC = {"cpu_sizes": [{"B": 3, "C": 5, "HEADS": 2, "D": 7}]}
