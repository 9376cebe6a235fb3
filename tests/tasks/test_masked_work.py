"""MaskedWork: which matmul work a task's masks make unnecessary, for the forms attention is written in,
and nothing for what is not a mask."""

import textwrap

import pytest
import torch

from mtmc.tasks import Task, summarize
from mtmc.tasks.masked_work import MaskedWork

B, H, L, D = 2, 3, 37, 16
TRIANGLE = 703  # pairs a 37 x 37 causal mask keeps: 1 + 2 + ... + 37
ALL_PAIRS = L * L

HEADER = """
import torch
import torch.nn as nn
import torch.nn.functional as F

L = 37

def get_inputs():
    return [torch.randn(2, 3, L, 16), torch.randn(2, 3, L, 16), torch.randn(2, 3, L, 16)]

def get_init_inputs():
    return []
"""


def attention_task(model_source: str) -> Task:
    return Task(name="attention", source=HEADER + textwrap.dedent(model_source))


def pair_flops(pairs: int) -> int:
    """One of attention's two matmuls over `pairs` (query, key) pairs: a multiply and an add per head dim."""
    return 2 * B * H * D * pairs


FORMS = {
    "a tril buffer made in the constructor, sliced and compared (minGPT)": """
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("bias", torch.tril(torch.ones(64, 64)).view(1, 1, 64, 64))

            def forward(self, q, k, v):
                t = q.size(-2)
                att = (q @ k.transpose(-2, -1)) * (1.0 / k.size(-1) ** 0.5)
                att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
                return F.softmax(att, dim=-1) @ v
        """,
    "where over an arange comparison": """
        class Model(nn.Module):
            def forward(self, q, k, v):
                i = torch.arange(q.shape[-2], device=q.device)
                att = torch.where(i[:, None] >= i[None, :], q @ k.transpose(-2, -1) / 4.0, float("-inf"))
                return torch.softmax(att, dim=-1) @ v
        """,
    "an additive bias of finfo.min": """
        class Model(nn.Module):
            def forward(self, q, k, v):
                t = q.size(-2)
                bias = torch.triu(torch.full((t, t), torch.finfo(q.dtype).min, device=q.device), 1)
                return torch.matmul((torch.matmul(q, k.transpose(-1, -2)) + bias).softmax(-1), v)
        """,
    "in-place masked_fill_ between einsums": """
        class Model(nn.Module):
            def forward(self, q, k, v):
                att = torch.einsum("bhid,bhjd->bhij", q, k)
                att.masked_fill_(torch.ones(L, L, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
                return torch.einsum("bhij,bhjd->bhid", att.softmax(-1), v)
        """,
    "a softmax written out (max, exp, sum)": """
        class Model(nn.Module):
            def forward(self, q, k, v):
                future = torch.ones(L, L, dtype=torch.bool, device=q.device).triu(1)
                att = (q @ k.transpose(-2, -1)).masked_fill(future, float("-inf"))
                e = torch.exp(att - att.amax(-1, keepdim=True))
                return (e / e.sum(-1, keepdim=True)) @ v
        """,
    "relu in place of the softmax": """
        class Model(nn.Module):
            def forward(self, q, k, v):
                future = torch.ones(L, L, dtype=torch.bool, device=q.device).triu(1)
                return F.relu((q @ k.transpose(-2, -1)).masked_fill(future, float("-inf"))) @ v
        """,
}


@pytest.mark.parametrize("form", FORMS)
def test_causal_masks_in_every_form_count_the_triangle(form):
    assert summarize(attention_task(FORMS[form])).matmul_flops == 2 * pair_flops(TRIANGLE)


MASKED_FILL = """
    class Model(nn.Module):
        def forward(self, q, k, v):
            future = torch.ones(L, L, dtype=torch.bool, device=q.device).triu(1)
            return torch.softmax((q @ k.transpose(-2, -1)).masked_fill(future, {fill}), dim=-1) @ v
    """


@pytest.mark.parametrize("fill,scores_pairs,values_pairs", [
    ("float('-inf')", TRIANGLE, TRIANGLE),
    ("-1e4", TRIANGLE, TRIANGLE),  # exp(-1e4) is 0: as good as -inf
    # the scores' masked places are still overwritten, but the softmax of 0 is not 0: @ v does them all
    ("0.0", TRIANGLE, ALL_PAIRS),
])
def test_the_fill_value_decides_which_matmul_is_spared(fill, scores_pairs, values_pairs):
    flops = summarize(attention_task(MASKED_FILL.format(fill=fill))).matmul_flops
    assert flops == pair_flops(scores_pairs) + pair_flops(values_pairs)


def test_disjoint_masks_add_up():
    # above and below the diagonal: only the 37 diagonal pairs are left
    source = """
        class Model(nn.Module):
            def forward(self, q, k, v):
                ones = torch.ones(L, L, dtype=torch.bool, device=q.device)
                att = (q @ k.transpose(-2, -1)).masked_fill(ones.triu(1), float("-inf"))
                return torch.softmax(att.masked_fill(ones.tril(-1), float("-inf")), dim=-1) @ v
        """
    assert summarize(attention_task(source)).matmul_flops == 2 * pair_flops(L)


def test_a_random_mask_has_no_value_and_is_counted_in_full():
    source = """
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("mask", torch.rand(L, L) > 0.5)

            def forward(self, q, k, v):
                return torch.softmax((q @ k.transpose(-2, -1)).masked_fill(self.mask, float("-inf")), -1) @ v
        """
    assert summarize(attention_task(source)).matmul_flops == 2 * pair_flops(ALL_PAIRS)


def with_meta_operands(build_b):
    """The unneeded FLOPs of x @ b for a random x (8 x 8) and b = build_b(), all on meta."""
    work = MaskedWork()
    with work, torch.device("meta"):
        x = torch.randn(8, 8)
        x @ build_b()
    return work.unneeded_flops()


def test_a_constant_operand_spares_its_zeros():
    # an upper triangle of ones (cumulative sums as a matmul): 28 of its 64 places are zero
    assert with_meta_operands(lambda: torch.ones(8, 8).triu()) == 2 * 8 * 28


def test_a_parameter_is_data_whatever_its_initial_value():
    assert with_meta_operands(lambda: torch.nn.Parameter(torch.zeros(8, 8))) == 0


def test_a_matmul_in_the_constructor_is_not_taken_from_the_forward():
    # FlopCounterMode counts only the forward: the constructor's product, of which the zeros of eye
    # make 15/16 unnecessary, is not in it (its table is random data, counted in full)
    source = """
        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.register_buffer("table", torch.randn(16, 16) @ torch.eye(16))

            def forward(self, q, k, v):
                return q @ self.table
        """
    assert summarize(attention_task(source)).matmul_flops == 2 * B * H * L * 16 * 16
