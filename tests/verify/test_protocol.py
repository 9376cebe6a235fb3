"""The verifier's per-verdict randomness: call order and count, and the derived second size."""

import random
from collections import Counter
from pathlib import Path

from mtmc.tasks import load_task
from mtmc.verify.protocol import (
    EXTRA_CALLS,
    call_schedule,
    derived_size,
    output_bytes,
    small_size,
    verdict_rng,
)

TASKS = Path(__file__).parent / "tasks"


def test_every_case_runs_twice_plus_one_to_three_repeats():
    lengths = set()
    for seed in range(40):
        calls = call_schedule(5, random.Random(seed))
        counts = Counter(calls)
        assert set(counts) == set(range(5)) and min(counts.values()) >= 2
        lengths.add(len(calls))
    assert lengths == {10 + k for k in range(EXTRA_CALLS[0], EXTRA_CALLS[1] + 1)}


def test_order_is_not_fixed():
    orders = {tuple(call_schedule(4, random.Random(seed))) for seed in range(20)}
    assert len(orders) > 10
    assert any(order[:2] != (0, 0) for order in orders)  # cases interleave


def test_rng_is_reproducible_with_a_seed_and_secret_without():
    assert call_schedule(6, verdict_rng(7, "abc")) == call_schedule(6, verdict_rng(7, "abc"))
    assert call_schedule(6, verdict_rng(7, "abc")) != call_schedule(6, verdict_rng(7, "abd")) or \
        call_schedule(6, verdict_rng(8, "abc")) != call_schedule(6, verdict_rng(7, "abc"))
    assert isinstance(verdict_rng(None, "abc"), random.SystemRandom)


def test_derived_size_is_odd_and_below_the_declared_one():
    task = load_task(TASKS / "softmax_one_size.py")
    declared = task.sizes("cpu")[0]
    seen = set()
    for seed in range(10):
        derived = derived_size(task, declared, random.Random(seed))
        assert set(derived) == {"batch_size", "dim"}
        for name, value in derived.items():
            assert value % 2 == 1 and 0.6 * declared[name] <= value < declared[name]
        seen.add(tuple(sorted(derived.items())))
    assert len(seen) > 1  # drawn, not fixed


def test_constants_that_size_the_model_are_left_alone():
    task = load_task(TASKS / "linear_relu.py")  # in_features also sizes the weights: it stays
    declared = task.sizes("cpu")[0]
    derived = derived_size(task, declared, random.Random(0))
    assert derived == {**declared, "batch_size": derived["batch_size"]}
    assert derived["batch_size"] == 7  # the one odd number in [0.6 * 9, 9)


def test_a_small_size_fits_its_budget_with_odd_constants_below_the_declared_ones():
    """The large-case plan's small size (issue 25): outputs within the budget, drawn, not fixed."""
    task = load_task(TASKS / "softmax_one_size.py")
    declared = task.sizes("cpu")[0]
    full = output_bytes(task, declared)
    seen = set()
    for seed in range(6):
        small = small_size(task, declared, random.Random(seed), full // 10)
        assert output_bytes(task, small) <= full // 10
        for name, value in small.items():
            assert value % 2 == 1 and value < declared[name]
        seen.add(tuple(sorted(small.items())))
    assert len(seen) > 1


def test_no_small_size_when_none_fits_or_no_constant_can_shrink():
    task = load_task(TASKS / "softmax_one_size.py")
    assert small_size(task, task.sizes("cpu")[0], random.Random(0), 0) is None
    linear = load_task(TASKS / "linear_relu.py")  # only batch_size may shrink: 1 row still has bytes
    assert small_size(linear, linear.sizes("cpu")[0], random.Random(0), 1) is None
