"""The verifier's per-verdict randomness: call order and count, and the derived second size."""

import random
from collections import Counter
from pathlib import Path

from mtmc.tasks import load_task
from mtmc.tasks.loader import builtin_names
from mtmc.verify.engine import LARGE_CASE_BYTES
from mtmc.verify.protocol import (
    EXTRA_CALLS,
    call_schedule,
    case_bytes,
    derived_size,
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


def test_case_bytes_counts_the_inputs_and_the_outputs_apart():
    """pointwise at n=1000: two float32 inputs and one float32 output (traced on the meta device)."""
    task = load_task(TASKS / "pointwise.py")
    assert case_bytes(task, {"n": 1000}) == (8000, 4000)
    reduction = load_task(TASKS / "mean_softmax.py")  # a row sum: inputs far larger than its outputs
    assert case_bytes(reduction, {"batch_size": 8, "dim": 64}) == (8 * 64 * 4, 8 * 4)


def test_a_small_size_fits_its_budget_with_odd_constants_below_the_declared_ones():
    """The large-case plan's small size (issue 25): inputs and outputs within the budget, drawn, not
    fixed."""
    task = load_task(TASKS / "softmax_one_size.py")
    declared = task.sizes("cpu")[0]
    full = max(case_bytes(task, declared))
    seen = set()
    for seed in range(6):
        small = small_size(task, declared, random.Random(seed), full // 10)
        assert max(case_bytes(task, small)) <= full // 10
        for name, value in small.items():
            assert value % 2 == 1 and value < declared[name]
        seen.add(tuple(sorted(small.items())))
    assert len(seen) > 1


def test_a_small_size_fits_the_inputs_too():
    """A reduction's outputs fit a budget its inputs do not: the small size shrinks until both fit."""
    task = load_task(TASKS / "mean_softmax.py")
    declared = task.sizes("cpu")[0]
    for seed in range(6):
        small = small_size(task, declared, random.Random(seed), 125)
        inputs, outputs = case_bytes(task, small)
        assert inputs <= 125 and outputs <= 125


def test_no_small_size_when_none_fits_or_no_constant_can_shrink():
    task = load_task(TASKS / "softmax_one_size.py")
    assert small_size(task, task.sizes("cpu")[0], random.Random(0), 0) is None
    linear = load_task(TASKS / "linear_relu.py")  # only batch_size may shrink: 1 row still has bytes
    assert small_size(linear, linear.sizes("cpu")[0], random.Random(0), 1) is None


def test_the_built_in_tasks_keep_the_full_plan_at_the_default_budget():
    """No built-in task's inputs or outputs pass LARGE_CASE_BYTES a case at its GPU size (its largest
    reductions read exactly 4 GiB), so counting the inputs moves none of them to the large-case plan."""
    for name in builtin_names():
        task = load_task(name)
        nbytes = case_bytes(task, task.sizes("cuda")[0])
        assert nbytes is not None and max(nbytes) <= LARGE_CASE_BYTES, (name, nbytes)
