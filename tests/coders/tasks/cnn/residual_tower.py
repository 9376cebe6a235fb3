"""A tower of residual blocks (conv, eval BatchNorm, ReLU, a 1x1 downsample branch every other
block): many elementwise chains, and branches whose merges must wait for each other."""
import torch
import torch.nn as nn

B, C, H, W = 4, 8, 16, 16
DEPTH = 4  # the structure: traced once, the same at every size


class Block(nn.Module):
    def __init__(self, c, downsample):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)
        self.downsample = nn.Sequential(nn.Conv2d(c, c, 1, bias=False), nn.BatchNorm2d(c)) \
            if downsample else None

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        identity = self.downsample(x) if self.downsample is not None else x
        out += identity
        return torch.relu(out)


class Model(nn.Module):
    def __init__(self, c, depth):
        super().__init__()
        self.blocks = nn.Sequential(*[Block(c, i % 2 == 0) for i in range(depth)])
        for m in self.modules():
            if isinstance(m, nn.BatchNorm2d):
                nn.init.normal_(m.weight)
                nn.init.normal_(m.bias)
                m.running_mean.normal_(0.0, 0.5)
                m.running_var.uniform_(0.25, 2.0)

    def forward(self, x):
        return self.blocks(x)


def get_inputs():
    return [torch.randn(B, C, H, W)]


def get_init_inputs():
    return [C, DEPTH]


# an inference tower: BatchNorm with running statistics, which fuses into the convs
MTMC = {"mode": "eval", "cpu_sizes": [{"B": 2, "C": 3, "H": 7, "W": 5}]}
