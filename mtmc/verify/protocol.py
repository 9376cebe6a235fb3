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
"""

from __future__ import annotations

import math
import random
from typing import Any

from mtmc.tasks import Task

EXTRA_CALLS = (1, 3)  # repeats of earlier cases per verdict, at least and at most
SHRINK = 0.6  # a derived size lies in [SHRINK * declared, declared)


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
    module = task.module(sizes)
    read = set(module.get_inputs.__code__.co_names) - set(module.get_init_inputs.__code__.co_names)
    derived = dict(sizes)
    for name in sorted(read):
        value = vars(module).get(name)
        if type(value) is not int or value <= 2:
            continue
        low = max(1, math.ceil(SHRINK * value))
        odd = [v for v in range(low, value) if v % 2 == 1]
        if odd:
            derived[name] = rng.choice(odd)
    return derived if derived != dict(sizes) else None
