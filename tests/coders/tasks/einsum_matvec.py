"""einsum equations that are one matmul (KernelBench 11's 4-D tensor times matrix, a bmm, a
product with a transposed weight) and a matrix-vector product (KernelBench 4's (K, 1) vector)."""
import torch
import torch.nn as nn

BATCH, ROWS, COLS, L, K, M = 4, 64, 128, 64, 96, 256


class Model(nn.Module):
    def forward(self, a, b, x, y, w, vector):
        four_d = torch.einsum("bijl,lk->bijk", a, b)
        batched = torch.einsum("bmk, bkn -> bmn", x, y)
        weight_t = torch.einsum("ml,kl->mk", x[0], w)
        return four_d, batched, weight_t, torch.matmul(x[0], vector)


def get_inputs():
    return [torch.randn(BATCH, ROWS, COLS, L), torch.randn(L, K), torch.randn(BATCH, M, L),
            torch.randn(BATCH, L, K), torch.randn(K, L), torch.randn(L, 1)]


def get_init_inputs():
    return []


MTMC = {"cpu_sizes": [{"BATCH": 2, "ROWS": 3, "COLS": 5, "L": 19, "K": 21, "M": 13}]}
