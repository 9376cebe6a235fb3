"""nn.TripletMarginLoss (KernelBench level 1's form), the functional form with swap, p = 1 and no
reduction, and nn.PairwiseDistance with p = 3, keepdim."""
import torch
import torch.nn as nn
import torch.nn.functional as F

B, D = 16, 64


class Model(nn.Module):
    def __init__(self, margin):
        super().__init__()
        self.loss = nn.TripletMarginLoss(margin=margin)
        self.distance = nn.PairwiseDistance(p=3.0, keepdim=True)

    def forward(self, anchor, positive, negative):
        swapped = F.triplet_margin_loss(anchor, positive, negative, margin=0.5, p=1, swap=True,
                                        reduction="none")
        return self.loss(anchor, positive, negative), swapped, self.distance(anchor, negative)


def get_inputs():
    scale = torch.rand(())
    return [torch.rand(B, D) * scale, torch.rand(B, D), torch.rand(B, D)]


def get_init_inputs():
    return [1.0]


MTMC = {"cpu_sizes": [{"B": 5, "D": 37}]}
