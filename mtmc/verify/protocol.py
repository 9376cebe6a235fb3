"""What the verifier's own secret randomness decides for each verdict, so no protocol is fixed.

A candidate that counts its calls, or that knows which sizes it will see, can behave while it is
checked and cheat otherwise (issue 23, classes 6 and 7). So, drawn in the main process where the
candidate cannot read it:
- `call_schedule`: the order of the forward calls over all cases and how many there are. Every
  case runs at least twice (the second call is the determinism check), and one to three extra
  calls repeat earlier cases at random points; every repeat must return exactly the first call's
  outputs, on the same model object.
- `derived_size`: for a task that declares a single size, a second one near it: each constant
  that `get_inputs` reads (and `get_init_inputs` does not) becomes a random odd number a little
  below its declared value, so a kernel hard-coded to the declared shape fails.
- `small_size`: for a task whose inputs or outputs are too large to move several times per verdict
  (the large-case plan, trusted.py), a size whose inputs and outputs fit a budget, drawn the same
  way but further below the declared values: the seeds the declared size no longer gets are checked
  there.
"""

from __future__ import annotations

import math
import random
from typing import Any

import torch

from mtmc.tasks import Task, summarize

EXTRA_CALLS = (1, 3)  # repeats of earlier cases per verdict, at least and at most
SHRINK = 0.6  # a derived size lies in [SHRINK * declared, declared)
SMALL_STEPS = 16  # small_size halves the constants' ceiling up to this many times


def verdict_rng(seed: int | None, digest: str) -> random.Random:
    """The schedule's randomness: secret per verdict, reproducible when the verifier has a seed."""
    return random.Random(f"{seed}:{digest}") if seed is not None else random.SystemRandom()


def call_schedule(cases: int, rng: random.Random) -> list[int]:
    """Case indices in call order: each case twice, plus repeats, shuffled."""
    calls = [i for i in range(cases) for _ in range(2)]
    calls += [rng.randrange(cases) for _ in range(rng.randint(*EXTRA_CALLS))]
    rng.shuffle(calls)
    return calls


def derived_size(task: Task, sizes: dict[str, Any], rng: random.Random) -> dict[str, Any] | None:
    """A second size set near `sizes` for a task that declares only one; None when no constant of
    `get_inputs` can change (then the task is checked at its one size, as before)."""
    return _shrunk(task, sizes, rng, 1.0)


def _shrunk(task: Task, sizes: dict[str, Any], rng: random.Random, scale: float) -> dict[str, Any] | None:
    """`sizes` with each integer constant that `get_inputs` reads (and `get_init_inputs` does not)
    drawn as a random odd number in [SHRINK * top, top), top = ceil(scale * declared value)."""
    module = task.module(sizes)
    read = set(module.get_inputs.__code__.co_names) - set(module.get_init_inputs.__code__.co_names)
    derived = dict(sizes)
    for name in sorted(read):
        value = vars(module).get(name)
        if type(value) is not int or value <= 2:
            continue
        top = min(value, max(2, math.ceil(scale * value)))
        low = max(1, math.ceil(SHRINK * top))
        odd = range(low | 1, top, 2)  # a range, not a list: a constant can be hundreds of thousands
        if not odd and scale < 1:
            odd = range(1, 2)  # shrunk to nothing between two odd numbers: the least, 1
        if odd:
            derived[name] = rng.choice(odd)
    return derived if derived != dict(sizes) else None


def case_bytes(task: Task, sizes: dict[str, Any]) -> tuple[int, int] | None:
    """Bytes of a case's inputs and of the reference's outputs at `sizes`, traced on the meta device
    (no memory, no compute); None when the trace fails (an op without a meta kernel)."""
    try:
        summary = summarize(task, sizes)
    except Exception:  # any failure means "unknown", and the caller keeps the full plan
        return None
    return _nbytes(summary.inputs), _nbytes(summary.outputs)


def _nbytes(tensors: list[Any]) -> int:
    return sum(math.prod(t.shape) * getattr(torch, t.dtype).itemsize for t in tensors)


def small_size(task: Task, sizes: dict[str, Any], rng: random.Random, budget: int) -> dict[str, Any] | None:
    """A size set below `sizes` whose inputs and outputs each take at most `budget` bytes: the
    constants' ceiling halved until they fit (SMALL_STEPS times at most), each constant then drawn
    as `derived_size` draws (odd, random). None when no constant of `get_inputs` can shrink enough."""
    for step in range(1, SMALL_STEPS + 1):
        small = _shrunk(task, sizes, rng, 0.5 ** step)
        if small is None:
            return None
        nbytes = case_bytes(task, small)
        if nbytes is not None and max(nbytes) <= budget:
            return small
    return None
