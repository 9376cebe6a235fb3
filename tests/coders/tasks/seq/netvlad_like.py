"""NetVLAD's forward as KernelBench writes it: torch imported as `th`, an unused argument with a
default, a device check that raises,
soft assignment (matmul, batch norm over the batch, softmax, a slice) and normalized residuals."""
import math

import torch as th
import torch.nn as nn
import torch.nn.functional as F

B, N, D, K, G = 4, 10, 16, 8, 2


class Model(nn.Module):
    def __init__(self, clusters, features, ghosts):
        super().__init__()
        self.features, self.clusters_n = features, clusters
        scale = 1 / math.sqrt(features)
        self.clusters = nn.Parameter(scale * th.randn(features, clusters + ghosts))
        self.batch_norm = nn.BatchNorm1d(clusters + ghosts)
        self.clusters2 = nn.Parameter(scale * th.randn(1, features, clusters))

    def forward(self, x, mask=None):  # get_inputs leaves the mask out
        samples = x.size()[1]
        x = x.view(-1, self.features)
        if x.device != self.clusters.device:
            raise ValueError(f"x.device {x.device} != cluster.device {self.clusters.device}")
        assignment = F.softmax(self.batch_norm(th.matmul(x, self.clusters)), dim=1)
        assignment = assignment[:, :self.clusters_n].view(-1, samples, self.clusters_n)
        a = th.sum(assignment, dim=1, keepdim=True) * self.clusters2
        vlad = th.matmul(assignment.transpose(1, 2), x.view(-1, samples, self.features))
        vlad = F.normalize(vlad.transpose(1, 2) - a)
        return F.normalize(vlad.reshape(-1, self.clusters_n * self.features))


def get_inputs():
    return [th.rand(B, N, D)]


def get_init_inputs():
    return [K, D, G]


# the feature and cluster counts are int attributes of the module, constants of the trace
MTMC = {"cpu_sizes": [{"B": 3, "N": 7, "D": 16, "K": 8, "G": 3}]}
