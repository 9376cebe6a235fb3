"""argmax / argmin over rows and over a leading dim with -inf and ties."""
import torch
import torch.nn as nn

B, N = 5, 37


class Model(nn.Module):
    def forward(self, x):
        return torch.argmax(x, dim=1), torch.argmin(x, dim=1), torch.argmax(x, dim=0), torch.argmin(x, 0)


def get_inputs():
    x = torch.randint(0, 3, (B, N)).float()  # many ties: the first index wins
    x[0] = float("-inf")  # every value -inf: index 0
    x[2, 20] = 5.0  # one larger value, past the first chunks
    x[3, 5] = float("-inf")
    return [x]


def get_init_inputs():
    return []


MTMC = {"cpu_sizes": [{"B": 5, "N": 37}]}
