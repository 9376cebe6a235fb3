"""ShuffleNet's channel shuffle (view, transpose, contiguous, view) between grouped 1x1 convs."""
import torch
import torch.nn as nn

B, C, H, W, GROUPS = 4, 12, 16, 16, 3


class Model(nn.Module):
    def __init__(self, c, groups):
        super().__init__()
        self.groups = groups
        self.conv1 = nn.Conv2d(c, c, 1, groups=groups, bias=False)
        self.conv2 = nn.Conv2d(c, c, 1, groups=groups)

    def shuffle(self, x):
        batch_size, channels, height, width = x.size()
        x = x.view(batch_size, self.groups, channels // self.groups, height, width)
        x = x.transpose(1, 2).contiguous()
        return x.view(batch_size, -1, height, width)

    def forward(self, x):
        return self.conv2(torch.relu(self.shuffle(self.conv1(x))))


def get_inputs():
    return [torch.randn(B, C, H, W)]


def get_init_inputs():
    return [C, GROUPS]


MTMC = {"cpu_sizes": [{"B": 2, "C": 6, "H": 5, "W": 7}]}
