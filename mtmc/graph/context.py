"""Run-scoped dependencies of the optimize graph: passed as `context=` on every invoke, never checkpointed.

A resumed run gets a fresh Context (the same roles and budgets rebuilt from the config), so nothing
here may carry progress: progress lives in `OptimizeState`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mtmc.budgets import Budgets
from mtmc.protocols import Coder, Planner, Verifier
from mtmc.reward import RewardConfig
from mtmc.tasks import Task

Event = dict[str, Any]


def _ignore(event: Event) -> None:
    pass


@dataclass
class Context:
    task: Task
    planner: Planner
    coder: Coder
    verifier: Verifier
    reward: RewardConfig = field(default_factory=RewardConfig)
    # max_steps, max_retries, and time_limit_s as node time summed over the run, checked before each step
    budgets: Budgets = field(default_factory=Budgets)
    on_event: Callable[[Event], None] = _ignore  # progress: {"event": "plan"|"attempt"|"finish", ...}
    clock: Callable[[], float] = time.monotonic  # injectable so budget tests need no sleeping
