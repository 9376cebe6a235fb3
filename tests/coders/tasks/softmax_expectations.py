"""Softmax-weighted row sums and picked columns: each reads its rows once when looped.

Soft-target cross-entropy, the entropy of a softmax, a KL divergence of a scaled input with an
offset, and a hard-target cross-entropy with ignored rows and a target in the last column.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

B, N = 7, 45


class Model(nn.Module):
    def forward(self, x, t, target):
        soft_ce = -(F.softmax(t, dim=-1) * F.log_softmax(x, dim=-1)).sum(dim=-1)
        entropy = -(F.softmax(x, dim=-1) * F.log_softmax(x, dim=-1)).sum(dim=-1)
        kl = F.kl_div(F.log_softmax(x / 2, dim=-1), F.log_softmax(t, dim=-1), reduction="none",
                      log_target=True).sum(dim=-1)
        hard_ce = F.cross_entropy(x, target, reduction="none")
        return soft_ce, entropy, kl * 0.5 + 1.0, hard_ce


def get_inputs():
    target = torch.randint(0, N, (B,))
    target[0] = -100  # ignored: the loss is 0
    target[1] = N - 1  # the last column, in the last (partly masked) chunk
    return [torch.randn(B, N) * 2, torch.randn(B, N) * 3, target]


def get_init_inputs():
    return []


MTMC = {"cpu_sizes": [{"B": 7, "N": 45}, {"B": 3, "N": 200}]}
