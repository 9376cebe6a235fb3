"""minGPT's causal self-attention: the mask is a registered tril buffer sliced by the traced
sequence length, applied with masked_fill; the ReLU variant returned beside it skips the softmax."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

B, T, C, HEADS, MAX_T = 2, 16, 32, 4, 32


class Model(nn.Module):
    def __init__(self, embed, heads, max_len):
        super().__init__()
        self.c_attn = nn.Linear(embed, 3 * embed)
        self.c_proj = nn.Linear(embed, embed)
        self.register_buffer("bias", torch.tril(torch.ones(max_len, max_len)).view(1, 1, max_len, max_len))
        self.n_head, self.n_embd = heads, embed

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        q = q.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        v = v.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        relu = F.relu(att) @ v
        y = y.transpose(1, 2).contiguous().view(b, t, c)
        return self.c_proj(y), relu


def get_inputs():
    return [torch.rand(B, T, C)]


def get_init_inputs():
    return [C, HEADS, MAX_T]


# the head count and width are int attributes of the module, constants of the trace (as in KernelBench)
MTMC = {"cpu_sizes": [{"B": 3, "T": 7, "C": 32, "HEADS": 4, "MAX_T": 11}]}
