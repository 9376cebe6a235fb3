"""A two-layer nn.TransformerEncoder (sequence first, relu) after a ViT patch embedding cut with
Tensor.unfold, and a batch-first, norm-first GELU encoder layer over the result."""
import torch
import torch.nn as nn

B, C, IMAGE, PATCH, DIM, HEADS, MLP = 2, 3, 16, 4, 32, 4, 48


class Model(nn.Module):
    def __init__(self, channels, patch, dim, heads, mlp):
        super().__init__()
        self.patch = patch
        self.embed = nn.Linear(channels * patch * patch, dim)
        self.encoder = nn.TransformerEncoder(
            nn.TransformerEncoderLayer(dim, heads, mlp, dropout=0.0), num_layers=2,
            enable_nested_tensor=False)
        self.last = nn.TransformerEncoderLayer(dim, heads, mlp, dropout=0.0, activation="gelu",
                                               batch_first=True, norm_first=True)

    def forward(self, img):
        p = self.patch
        x = img.unfold(2, p, p).unfold(3, p, p).reshape(img.shape[0], -1, p * p * img.shape[1])
        x = self.embed(x)
        x = self.encoder(x.transpose(0, 1))
        return self.last(x.transpose(0, 1))


def get_inputs():
    return [torch.rand(B, C, IMAGE, IMAGE)]


def get_init_inputs():
    return [C, PATCH, DIM, HEADS, MLP]


# the patch size is an int attribute of the module, a constant of the trace: it keeps its value
MTMC = {"cpu_sizes": [{"B": 3, "C": 3, "IMAGE": 12, "PATCH": 4, "DIM": 24, "HEADS": 3, "MLP": 20}]}
