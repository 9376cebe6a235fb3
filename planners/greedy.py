"""The greedy search planner: a first-improvement hill climb over the legal steps, no learning.

docs/design.md's search planner in its simplest honest form. On the current program (the last one the
gate accepted; before the port, none) it proposes, in the order of `state.legal`, the first non-stop
step not yet tried on that program. The gate is the climb's test: an accepted step (correct and not
slower) moves to the new program, and the tried set starts over there; a rejected step stays
tried. Before the port this proposes whatever the coder offers first (the port, or a library
step). When every legal step of the current program was tried and rejected, it stops.

A step rejected on one program is tried again on the next accepted one (it may help there). A
step accepted earlier is proposed again only if it is a fusion: fusions add up (the same
`fuse epilogue` merges the next pair, see `may_repeat` in planners/heuristic.py) and the coder stops
offering one when no pair is left. A knob is not: applied again it is a no-op, or it undoes a later
knob of its kind, and the gate accepts "not slower" (without timings, any correct step), so
`tile BLOCK=1024` and `tile BLOCK=2048` would take turns until the budget ends. So no step is
proposed twice on one program, each knob is accepted at most once a run, and the climb ends.

Cost: it tries every legal step of each program it reaches, so a run costs about (legal steps per
program) x (accepted steps) macro steps, each a coder call and a verification. It is an exhaustive
upper bound and a data generator for training, not a cheap baseline: give it a budget (`max_steps`,
`time_limit_s`) sized for the menu, e.g. `mtmc bench planner=greedy max_steps=60`, or cap the
rejections per program with `max_tries_per_program` (then it is no longer exhaustive).
"""

from __future__ import annotations

from mtmc.protocols import PlanState, StepRecord
from mtmc.strategies import STOP, Strategy
from planners.heuristic import CUMULATIVE


class GreedyPlanner:
    def __init__(self, max_tries_per_program: int | None = None) -> None:
        if max_tries_per_program is not None and max_tries_per_program < 1:
            raise ValueError(f"max_tries_per_program must be >= 1 or None, got {max_tries_per_program}")
        self.max_tries_per_program = max_tries_per_program

    def propose(self, state: PlanState) -> Strategy:
        rejected = since_last_accepted(state.history)  # every step after the last acceptance was rejected
        if self.max_tries_per_program is not None and len(rejected) >= self.max_tries_per_program:
            return STOP
        tried = excluded(state.history)
        for strategy in state.legal:  # the coder's order: no ranking of our own, that is the point
            if not strategy.is_stop and str(strategy) not in tried:
                return strategy
        return STOP  # every legal step of this program was tried and rejected: a local optimum


def since_last_accepted(history: list[StepRecord]) -> list[StepRecord]:
    """The steps tried on the current program: those after the last accepted one (all, before any)."""
    last = max((i for i, record in enumerate(history) if record.accepted), default=-1)
    return history[last + 1:]


def excluded(history: list[StepRecord]) -> set[str]:
    """Strategy texts not to propose now: those tried on the current program, and every accepted
    step that is not a fusion (knobs do not add up: again, they undo or repeat themselves)."""
    tried = {record.strategy for record in since_last_accepted(history)}
    return tried | {record.strategy for record in history
                    if record.accepted and Strategy.parse(record.strategy).kind not in CUMULATIVE}
