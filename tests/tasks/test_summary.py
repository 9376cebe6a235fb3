"""summarize: matmul FLOPs of attention count the work a kernel must do, the causal triangle only."""

import pytest

from mtmc.tasks import Task, load_task, summarize

B, H, D = 2, 3, 16

SDPA = """
import torch
import torch.nn as nn
import torch.nn.functional as F

class Model(nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal={causal})

def get_inputs():
    return [torch.randn(2, 3, {L}, 16, dtype=torch.{dtype}), torch.randn(2, 3, {S}, 16, dtype=torch.{dtype}),
            torch.randn(2, 3, {S}, 16, dtype=torch.{dtype})]

def get_init_inputs():
    return []
"""


def sdpa(length: int, keys: int, causal: bool, dtype: str = "float32") -> Task:
    return Task(name="sdpa", source=SDPA.format(L=length, S=keys, causal=causal, dtype=dtype))


def attention_flops(pairs: int) -> int:
    """q @ k^T and probabilities @ v: a multiply and an add per (query, key) pair and head dim, twice."""
    return 2 * 2 * B * H * D * pairs


# (query length, key length, pairs kept), counted by hand. Causal keeps key j for query i where
# j <= i, aligned at the top left: 1 + 2 + ... + 37 = 703 at 37 x 37; the same 703 at 37 queries
# over 61 keys (query 36 sees keys 0-36); at 61 queries over 37 keys, queries 37-60 see all 37 keys:
# 703 + 24 * 37 = 1591.
CAUSAL_PAIRS = [(37, 37, 703), (37, 61, 703), (61, 37, 1591)]


@pytest.mark.parametrize("length,keys,pairs", CAUSAL_PAIRS)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_causal_sdpa_counts_the_pairs_it_keeps(length, keys, pairs, dtype):
    assert summarize(sdpa(length, keys, causal=True, dtype=dtype)).matmul_flops == attention_flops(pairs)


@pytest.mark.parametrize("length,keys", [(37, 37), (37, 61)])
def test_sdpa_without_a_mask_counts_every_pair(length, keys):
    assert summarize(sdpa(length, keys, causal=False)).matmul_flops == attention_flops(length * keys)


def test_the_builtin_causal_attention_counts_its_triangle():
    # matmul, masked_fill of a ones().triu(1) mask with -inf, softmax, matmul (the manual form)
    task = load_task("attention_causal_fp16")
    sizes = {"batch": 2, "heads": 3, "seq": 37, "head_dim": 16}
    assert summarize(task, sizes).matmul_flops == attention_flops(703)

