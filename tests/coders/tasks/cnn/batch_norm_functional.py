"""F.batch_norm with training=True on (N, C, L) and on (N, C): batch statistics, the running
buffers passed along but not read by the output (PyTorch updates them in place: state, not output).
Passed as the module's own buffers: `.clone()` of them would be a 1-D constant of the fx trace,
which the template refuses."""
import torch
import torch.nn as nn
import torch.nn.functional as F

B, C, L = 8, 16, 32


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(c))
        self.bias = nn.Parameter(torch.randn(c))
        self.register_buffer("running_mean", torch.zeros(c))
        self.register_buffer("running_var", torch.ones(c))

    def forward(self, x):
        y = F.batch_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                         training=True, eps=1e-3)
        z = F.batch_norm(x.sum(dim=2), None, None, training=True)
        return y * z.unsqueeze(2)


def get_inputs():
    return [torch.randn(B, C, L) * 2 - 1]


def get_init_inputs():
    return [C]


MTMC = {"cpu_sizes": [{"B": 3, "C": 5, "L": 7}]}
