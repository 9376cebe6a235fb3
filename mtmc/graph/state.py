"""The optimize loop's state: plain JSON-like data only, so every checkpoint is readable and portable.

Programs, verdicts and summaries are stored as their `to_dict()` forms, strategies as their
canonical text. Live objects (task, planner, coder, verifier) are run-scoped dependencies and live in
`mtmc.graph.context.Context`, never here. Fields without a reducer are overwritten by the node that
returns them; `history`, `trajectory` and `elapsed_s` accumulate.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, Literal

from typing_extensions import TypedDict

Outcome = Literal["accepted", "retry", "rejected"]
StopReason = Literal["planner_stop", "max_steps", "time_limit", "nothing_legal"]


class OptimizeState(TypedDict, total=False):
    summary: dict[str, Any]
    """TaskSummary.to_dict() of the task, set once by `baseline`. Overwritten."""

    program: dict[str, Any] | None
    """The current accepted program (Program.to_dict()); None until a port is accepted. Only `gate`
    writes it, and only on acceptance: a failed step never loses the best verified program. Overwritten."""

    verdict: dict[str, Any] | None
    """Verdict.to_dict() of `program`. Overwritten together with it."""

    step: int
    """Index of the macro step in progress (0-based) = number of finished steps. Overwritten."""

    strategy: str | None
    """Canonical text of the step in progress, chosen by `plan`. Overwritten."""

    attempt: int
    """Coder attempt within the step (0 = first, up to max_retries). Overwritten."""

    feedback: dict[str, Any] | None
    """Verdict.to_dict() of the failed previous attempt, handed to the coder on a retry. Overwritten."""

    candidate: dict[str, Any] | None
    """Program.to_dict() the coder returned this attempt; None when it raised CoderError. Overwritten."""

    candidate_verdict: dict[str, Any] | None
    """Verdict.to_dict() of `candidate` (a compile_error verdict on CoderError). Overwritten."""

    coder_usage: dict[str, Any] | None
    """What this attempt's coder call cost when it raised CoderError (`CoderError.usage`); a
    returned program carries its own in `metadata["usage"]`. Overwritten."""

    attempt_wall_s: float
    """Seconds spent coding and verifying this attempt. Overwritten."""

    outcome: Outcome | None
    """The gate's decision on the last attempt: accepted, retry or rejected. Overwritten."""

    history: Annotated[list[dict[str, Any]], operator.add]
    """One StepRecord dict per finished step (the planner's view). Reducer: append."""

    trajectory: Annotated[list[dict[str, Any]], operator.add]
    """One record per coder attempt: step, attempt, strategy, diff, verdict, reward, wall, usage.
    Reducer: append. `trajectory.jsonl` is written from it."""

    elapsed_s: Annotated[float, operator.add]
    """Seconds the graph's nodes have run, summed over resumes (a dead process's downtime does not
    count against the time limit). Reducer: add."""

    stop_reason: StopReason | None
    """Why the run ended; set by `plan` when it routes to `finish`. Overwritten."""

    finished: bool
    """True once `finish` ran. Overwritten."""


def initial_state() -> OptimizeState:
    """The input of a fresh run: everything else is filled in by `baseline`."""
    return OptimizeState(history=[], trajectory=[], elapsed_s=0.0)
