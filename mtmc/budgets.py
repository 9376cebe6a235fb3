"""The run budgets and the reward, declared once for every job.

`Budgets` is what one optimize run may spend; `mtmc optimize`, `mtmc bench` (per task) and
`mtmc train` (its eval, under `eval.`) take its fields as keys of their config, `max_steps=6`:

    budgets = Budgets.from_config(cfg)          # one per job, checked on construction
    run_optimize(..., budgets=budgets, reward=instantiate(cfg.reward))

The job configs do not repeat the keys: their defaults lists merge the structured configs
registered here (`register_configs`), `budgets@_global_: default` (`budgets@eval: default` for the
train job's eval) and `reward: default`. Hydra refuses a key that does not exist when it composes
the job (and a reward value of the wrong type: that node is typed); a budget out of range is one
sentence (`budget_problem`, what mtmc/config_check.py says before a job starts).
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mtmc.reward import RewardConfig


def _whole(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _seconds(v: object) -> bool:
    return v is None or (isinstance(v, int | float) and not isinstance(v, bool) and v > 0)


# budget key -> (what it must be, the test)
RULES: dict[str, tuple[str, Callable[[object], bool]]] = {
    "max_steps": ("a whole number, at least 1", lambda v: _whole(v) and v >= 1),
    "max_retries": ("a whole number, at least 0", lambda v: _whole(v) and v >= 0),
    "time_limit_s": ("a positive number of seconds, or null for no limit", _seconds),
}


def budget_problem(key: str, value: object, prefix: str = "") -> str:
    """The sentence for a budget value out of range ('' when it is legal)."""
    rule, legal = RULES[key]
    return "" if legal(value) else f"{prefix}{key}={value}: must be {rule}"


@dataclass(frozen=True)
class Budgets:
    """What one optimize run may spend. Invalid values raise ValueError with one sentence."""

    max_steps: int = 12  # macro steps, the port included
    max_retries: int = 1  # extra coder attempts per step, each fed the failing verdict
    time_limit_s: float | None = 3600.0  # wall clock for the whole run, checked before each step; null: none

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            problem = budget_problem(field.name, getattr(self, field.name))
            if problem:
                raise ValueError(problem)

    @classmethod
    def from_config(cls, cfg: Any) -> Budgets:
        """The budgets of a job's config (or of its `eval:` node): its keys of these names."""
        return cls(**{field.name: cfg[field.name] for field in dataclasses.fields(cls)})

    def keywords(self) -> dict[str, Any]:
        """As plain data: a run's result.json and a bench folder's record."""
        return dataclasses.asdict(self)


# The reward group's node: RewardConfig's own fields and defaults, with the `_target_` that builds
# it, so `reward.<field>=` is typed and an unknown field is refused when the job composes.
RewardNode = dataclasses.make_dataclass(
    "RewardConfig",  # what a refusal names: "Key 'foo' not in 'RewardConfig'"
    [("_target_", str, dataclasses.field(default=f"{RewardConfig.__module__}.{RewardConfig.__qualname__}"))]
    + [(f.name, typing.get_type_hints(RewardConfig)[f.name], dataclasses.field(default=f.default))
       for f in dataclasses.fields(RewardConfig)])


def register_configs() -> None:
    """Put `budgets/default` and `reward/default` in Hydra's ConfigStore (idempotent); the job
    configs' defaults lists name them, so this runs before any of them is composed."""
    from hydra.core.config_store import ConfigStore

    store = ConfigStore.instance()
    # Budgets' defaults as plain values: merged at the top level (`max_steps=6`), a typed node would
    # type the whole job config as Budgets. Their check is `budget_problem`, before the job starts.
    store.store(group="budgets", name="default", node=Budgets().keywords())
    store.store(group="reward", name="default", node=RewardNode)
