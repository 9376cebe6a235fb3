"""Cross-entropy loss over class logits."""
import torch
import torch.nn as nn
import torch.nn.functional as F

B, C = 512, 8192


class Model(nn.Module):
    def forward(self, logits, target):
        return F.cross_entropy(logits, target)


def get_inputs():
    return [torch.randn(B, C), torch.randint(0, C, (B,))]


def get_init_inputs():
    return []


MTMC = {"cpu_sizes": [{"B": 9, "C": 37}]}
