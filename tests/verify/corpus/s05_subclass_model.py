# PATTERN: S5 inherit the reference Model and pass
# TASK: softmax
# EXPECT: rejected
# MESSAGE: subclasses the reference Model
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


class ModelNew(Model):
    pass
