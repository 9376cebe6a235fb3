"""An RNN unrolled by a Python loop over the sequence, `for t in range(x.size(0))`, whose outputs are
stacked, with an assert on the input's width. The sequence length is the model's (its constructor
takes it), so every size the task is checked at has the traced length: the trace answers the loop
with it, and the program checks it on entry."""
import torch
import torch.nn as nn

B, T, F, H, OUT = 4, 3, 12, 20, 6


class Model(nn.Module):
    def __init__(self, steps, features, hidden, out):
        super().__init__()
        self.steps, self.features = steps, features
        self.i2h = nn.Linear(features + hidden, hidden)
        self.h2o = nn.Linear(hidden, out)

    def forward(self, x, h0):
        seq_len, batch, width = x.size()
        assert width == self.features, "wrong input width"
        hidden = h0
        outputs = []
        for t in range(seq_len):
            hidden = torch.tanh(self.i2h(torch.cat((x[t], hidden), dim=1)))
            outputs.append(self.h2o(hidden))
        return torch.stack(outputs, dim=0), hidden


def get_inputs():
    return [torch.rand(T, B, F), torch.rand(B, H)]


def get_init_inputs():
    return [T, F, H, OUT]


MTMC = {"cpu_sizes": [{"B": 3, "F": 7, "H": 17, "OUT": 5}, {"B": 5, "F": 9, "H": 11, "OUT": 3}]}
