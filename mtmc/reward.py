"""The planner's step reward: what one verified macro step is worth.

Shaped like the QiMeng-Kernel MTMC paper's reward cascade (compile fails -1.0,
execution fails -0.5, correct +0.5, faster +1.0, plus a step-proportional decay against cycling),
made continuous on the speed side: a correct program earns a small fixed reward plus the log of its
speedup over the previous accepted program, so a 2x step and two 1.41x steps are worth the same.
Every number lives in `RewardConfig`; every job's `reward:` node is built from it (mtmc/budgets.py),
so `reward.correct=0.5` sets one.

    >>> from mtmc.verify.verdict import Status, Verdict
    >>> cfg = RewardConfig()
    >>> step_reward(Verdict(Status.COMPILE_ERROR), None, cfg)
    -1.0
    >>> step_reward(Verdict(Status.OK), None, cfg)   # CPU interpreter: no timings, correctness only
    0.2
    >>> prev, new = Verdict(Status.OK, candidate_ms=2.0), Verdict(Status.OK, candidate_ms=1.0)
    >>> round(step_reward(new, prev, cfg), 4)        # 0.2 + log(2)
    0.8931
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mtmc.verify.verdict import Status, Verdict


@dataclass(frozen=True)
class RewardConfig:
    """The reward table. Failures are ordered: a hack is worse than a crash, a crash worse than a
    wrong answer (a wrong answer ran, so the step was at least executable)."""

    rejected: float = -2.0  # reward hacking caught by the verifier: never worth trying
    compile_error: float = -1.0  # also what a CoderError counts as
    crash: float = -1.0
    timeout: float = -1.0
    runtime_error: float = -1.0
    incorrect: float = -0.5
    unrecorded: float = 0.0  # replay: no measurement of the program, so neither reward nor penalty
    correct: float = 0.2  # small, so a step that changes nothing is barely worth taking
    speedup_weight: float = 1.0  # multiplies log(speedup over the previous accepted program)
    max_log_speedup: float = 3.0  # |log speedup| is clipped here: one noisy timing cannot dominate
    step_decay: float = 0.0  # subtracted once per step index (paper: against cyclic behaviour)


def step_reward(verdict: Verdict, previous: Verdict | None, cfg: RewardConfig, *, step: int = 0) -> float:
    """Reward of one verified attempt at step `step` (0-based).

    `previous` is the verdict of the program the step started from (None before the port, where
    the reference itself, timed as eager, is the previous program).
    """
    if verdict.status == Status.OK:
        reward = cfg.correct
        log_speedup = _log_speedup(verdict, previous)
        if log_speedup is not None:
            clipped = max(-cfg.max_log_speedup, min(cfg.max_log_speedup, log_speedup))
            reward += cfg.speedup_weight * clipped
    else:
        reward = {
            Status.REJECTED: cfg.rejected,
            Status.COMPILE_ERROR: cfg.compile_error,
            Status.CRASH: cfg.crash,
            Status.TIMEOUT: cfg.timeout,
            Status.RUNTIME_ERROR: cfg.runtime_error,
            Status.INCORRECT: cfg.incorrect,
            Status.UNRECORDED: cfg.unrecorded,
        }[verdict.status]
    return reward - cfg.step_decay * step


def speedup_over(verdict: Verdict, previous: Verdict | None) -> float | None:
    """Speedup of `verdict`'s candidate over the previous accepted program (or eager before the
    port); None where either side has no timing, as on the CPU interpreter."""
    if previous is None or previous.candidate_ms is None:
        return verdict.speedup_eager
    if verdict.candidate_ms is None or verdict.candidate_ms <= 0:
        return None
    return previous.candidate_ms / verdict.candidate_ms


def _log_speedup(verdict: Verdict, previous: Verdict | None) -> float | None:
    speedup = speedup_over(verdict, previous)
    return math.log(speedup) if speedup else None
