"""The TF32 pack helper (coders/template/emit/conv_pack.py) against PyTorch on the CPU interpreter:
the channels-last layout at odd sizes and TF32 rounding to nearest, ties away from zero, with NaN
and infinities kept."""

from __future__ import annotations

import math

import pytest
import torch

from coders.template.emit import conv_pack
from coders.template.emit.common import Writer
from tests.coders.test_template import import_program
from tests.coders.test_template_conv import tf32_nearest


@pytest.fixture(scope="module")
def pack(tmp_path_factory):
    w = Writer()
    w("import math")
    w("import torch")
    w("import triton")
    w("import triton.language as tl")
    conv_pack.emit_helpers(w)
    return import_program(w.text(), tmp_path_factory.mktemp("pack"), "pack")._tf32_pack


@pytest.mark.parametrize("shape", [(2, 37, 5, 13), (1, 3, 70), (3, 33, 2, 3, 11), (5, 1, 1, 1)])
def test_pack_lays_out_channels_last_and_rounds_to_nearest(pack, shape):
    """Odd channel and spatial counts: several masked tiles of 32 channels x 64 positions."""
    torch.manual_seed(0)
    t = torch.randn(shape)
    got = pack(t)
    order = (0, *range(2, len(shape)), 1)
    want = tf32_nearest(t).permute(order).contiguous()
    assert got.shape == want.shape and got.is_contiguous()
    assert torch.equal(got, want)
    assert not torch.equal(got, t.permute(order))  # the rounding happened


def test_pack_rounds_ties_away_from_zero_and_keeps_nan_and_infinities(pack):
    one_ulp = 2.0 ** -23
    halfway = 1.0 + 2.0 ** -11  # exactly between two TF32 values (10-bit mantissa)
    values = [halfway, -halfway, 1.0 + 2.0 ** -11 - one_ulp, math.inf, -math.inf, math.nan, 0.0, -0.0]
    t = torch.tensor(values, dtype=torch.float32).reshape(1, len(values), 1)
    got = pack(t).reshape(-1)
    assert got[0] == 1.0 + 2.0 ** -10 and got[1] == -(1.0 + 2.0 ** -10)
    assert got[2] == 1.0  # below the halfway point: down
    assert got[3] == math.inf and got[4] == -math.inf and math.isnan(got[5])
    assert got[6] == 0.0 and torch.signbit(got[7])


def test_pack_of_an_empty_tensor_launches_nothing(pack):
    assert pack(torch.empty(0, 4, 3)).shape == (0, 3, 4)
