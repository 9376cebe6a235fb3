"""A MobileNet-style model whose __init__ builds its blocks with nested functions (their
parameters shadow nothing global), nn.Sequential nesting, depthwise convs, ReLU6, global
average pooling, flatten and a linear head."""
import torch
import torch.nn as nn

B, C_IN, H, W, CLASSES = 4, 3, 32, 32, 10


class Model(nn.Module):
    def __init__(self, c_in, classes, width=8):
        super().__init__()

        def conv_bn(inp, oup, stride):
            return nn.Sequential(nn.Conv2d(inp, oup, 3, stride, 1, bias=False), nn.BatchNorm2d(oup),
                                 nn.ReLU6(inplace=True))

        def conv_dw(inp, oup, stride):
            return nn.Sequential(conv_bn(inp, inp, stride)[0:0],  # an empty Sequential, as in the wild
                                 nn.Conv2d(inp, inp, 3, stride, 1, groups=inp, bias=False),
                                 nn.BatchNorm2d(inp), nn.ReLU(inplace=True),
                                 nn.Conv2d(inp, oup, 1, 1, 0, bias=False), nn.BatchNorm2d(oup),
                                 nn.ReLU(inplace=True))

        self.features = nn.Sequential(conv_bn(c_in, width, 2), conv_dw(width, 2 * width, 1),
                                      conv_dw(2 * width, 2 * width, 2), nn.AdaptiveAvgPool2d(1))
        self.fc = nn.Linear(2 * width, classes)
        for m in self.modules():
            if isinstance(m, nn.BatchNorm2d):
                nn.init.normal_(m.weight)
                m.running_var.uniform_(0.5, 2.0)

    def forward(self, x):
        x = self.features(x)
        x = x.view(x.size(0), -1)
        return self.fc(x)


def get_inputs():
    return [torch.randn(B, C_IN, H, W)]


def get_init_inputs():
    return [C_IN, CLASSES]


MTMC = {"cpu_sizes": [{"B": 2, "C_IN": 3, "H": 11, "W": 9, "CLASSES": 5}]}
