"""Self-attention over an image's pixels with nn.MultiheadAttention (sequence first), a residual and
a LayerNorm, as KernelBench's vision attention block writes it."""
import torch
import torch.nn as nn

B, C, HEIGHT, WIDTH, HEADS = 2, 32, 8, 8, 4


class Model(nn.Module):
    def __init__(self, embed, heads):
        super().__init__()
        self.attn = nn.MultiheadAttention(embed, heads)
        self.norm = nn.LayerNorm(embed)

    def forward(self, x):
        b, c, h, w = x.shape
        x = x.view(b, c, h * w).permute(2, 0, 1)
        out, _ = self.attn(x, x, x)
        x = self.norm(out + x)
        return x.permute(1, 2, 0).view(b, c, h, w)


def get_inputs():
    return [torch.rand(B, C, HEIGHT, WIDTH)]


def get_init_inputs():
    return [C, HEADS]


MTMC = {"cpu_sizes": [{"B": 3, "C": 24, "HEIGHT": 5, "WIDTH": 3, "HEADS": 3}]}
