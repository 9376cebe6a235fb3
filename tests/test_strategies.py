"""The strategy vocabulary: canonical text round-trips, bad text fails clearly."""

import pytest

from mtmc.strategies import KINDS, Strategy, StrategyError

EXAMPLES = ["port", "fuse epilogue", "tile BLOCK_M=128 BLOCK_N=64 BLOCK_K=32", "tile BLOCK=2048",
            "num_warps 8", "num_stages 3", "group_m 8", "split_k 4", "rows 16", "persistent", "vectorize",
            "autotune", "library conv2d", "precision tf32", "fix compile_error", "stop"]


def test_examples_cover_every_kind():
    assert {text.split()[0] for text in EXAMPLES} == set(KINDS)


@pytest.mark.parametrize("text", EXAMPLES)
def test_canonical_text_round_trips(text):
    strategy = Strategy.parse(text)
    assert str(strategy) == text
    assert Strategy.parse(str(strategy)) == strategy
    assert strategy.instruction() and "{" not in strategy.instruction()


def test_keyword_order_is_canonical():
    a = Strategy.parse("tile BLOCK_K=32 BLOCK_M=128")
    assert str(a) == "tile BLOCK_M=128 BLOCK_K=32"
    assert a == Strategy.make("tile", BLOCK_M=128, BLOCK_K=32) and hash(a) == hash(Strategy.parse(str(a)))


@pytest.mark.parametrize("text, message", [
    ("", "empty"), ("unroll 4", "unknown strategy kind 'unroll'"), ("num_warps", "needs one positional"),
    ("stop now", "takes no positional"), ("tile BLOCK_Q=4", "takes no argument"),
])
def test_bad_text(text, message):
    with pytest.raises(StrategyError, match=message):
        Strategy.parse(text)
