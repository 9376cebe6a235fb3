# PATTERN: S14 flipping a global precision switch (TF32)
# TASK: matmul
# EXPECT: rejected
# MESSAGE: global PyTorch settings
import torch
import torch.nn as nn

torch.backends.cuda.matmul.allow_tf32 = True


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a
