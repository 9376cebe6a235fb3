"""The template coder's GPU timing tool refuses variants it would misread (no GPU needed)."""

import pytest

from benchmarks.gpu_bench import check_variant
from mtmc.strategies import StrategyError


@pytest.mark.parametrize("variant", ["port", "fused", "tuned", "fused+autotune+persistent"])
def test_variants_it_understands(variant):
    check_variant(variant)


@pytest.mark.parametrize("variant", ["autotune+persistent", "group_m 8", "port+autotune", "tuned+autotune"])
def test_a_variant_must_start_from_the_fused_program(variant):
    with pytest.raises(ValueError, match="expected port, fused, tuned"):
        check_variant(variant)


def test_a_misspelt_step_fails_before_any_timing():
    with pytest.raises(StrategyError):
        check_variant("fused+autotun")
