"""The optimize loop's nodes and routers: plain functions of (state, runtime) returning state updates.

    baseline -> plan -> code -> verify -> gate -> plan ... -> finish
                          \\_____________/  (a CoderError skips verify: it already is a verdict)
                gate -> code               (retry with the failing verdict as feedback)

Every node charges its own duration to `elapsed_s`, which is what the time limit reads. Routers
return `Literal` node names and raise on a state they do not understand: a LangGraph router that
returns an unknown name would otherwise end the run silently (docs/design.md, "The loop").
"""

from __future__ import annotations

import dataclasses
import difflib
from typing import Any, Literal

from langgraph.runtime import Runtime

from mtmc.graph.context import Context
from mtmc.graph.state import OptimizeState, Outcome, StopReason
from mtmc.program import Program
from mtmc.protocols import CoderError, PlanState, StepRecord
from mtmc.reward import speedup_over, step_reward
from mtmc.strategies import Strategy
from mtmc.tasks import TaskSummary, summarize
from mtmc.tasks.summary import TensorInfo
from mtmc.verify.verdict import Status, Verdict

# ---------------------------------------------------------------------------------------------------
# nodes


def baseline(state: OptimizeState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Summarize the task once; the eager/compiled baseline times arrive with every verdict."""
    ctx = runtime.context
    start = ctx.clock()
    summary = summarize(ctx.task).to_dict()
    return {"summary": summary, "step": 0, "attempt": 0, "program": None, "verdict": None,
            "stop_reason": None, "finished": False, "elapsed_s": ctx.clock() - start}


def plan(state: OptimizeState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Check the budgets, then ask the planner for the next step among the legal ones."""
    ctx = runtime.context
    start = ctx.clock()
    program = _program(state.get("program"))
    stop: StopReason | None = _budget_spent(state, ctx)
    strategy = None
    if stop is None:
        legal = ctx.coder.legal_strategies(ctx.task, program)
        if not any(not s.is_stop for s in legal):
            stop = "nothing_legal"
        else:
            strategy = ctx.planner.propose(_plan_state(state, ctx, program, legal))
            if strategy.is_stop:
                stop = "planner_stop"
            elif strategy not in legal:
                # Planners choose from `legal` by contract; running an illegal step would hide the bug.
                raise ValueError(f"planner {type(ctx.planner).__name__} proposed {str(strategy)!r}, "
                                 f"not among the legal steps {[str(s) for s in legal]}")
    elapsed = ctx.clock() - start
    if stop is not None:
        return {"stop_reason": stop, "strategy": None, "elapsed_s": elapsed}
    ctx.on_event({"event": "plan", "step": state["step"], "strategy": str(strategy)})
    return {"strategy": str(strategy), "attempt": 0, "feedback": None, "outcome": None,
            "stop_reason": None, "elapsed_s": elapsed}


def code(state: OptimizeState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Apply the step to the current program; a CoderError becomes a compile_error verdict."""
    ctx = runtime.context
    start = ctx.clock()
    try:
        candidate = ctx.coder.apply(ctx.task, _program(state.get("program")),
                                    Strategy.parse(state["strategy"]), _verdict(state.get("feedback")))
        update = {"candidate": candidate.to_dict(), "candidate_verdict": None, "coder_usage": None}
    except CoderError as err:
        failed = Verdict(Status.COMPILE_ERROR, message=f"coder error: {err}")
        update = {"candidate": None, "candidate_verdict": failed.to_dict(), "coder_usage": err.usage}
    elapsed = ctx.clock() - start
    return {**update, "attempt_wall_s": elapsed, "elapsed_s": elapsed}


def verify(state: OptimizeState, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = runtime.context
    start = ctx.clock()
    verdict = ctx.verifier.verify(ctx.task, Program.from_dict(state["candidate"]))
    elapsed = ctx.clock() - start
    return {"candidate_verdict": verdict.to_dict(), "attempt_wall_s": state["attempt_wall_s"] + elapsed,
            "elapsed_s": elapsed}


def gate(state: OptimizeState, runtime: Runtime[Context]) -> dict[str, Any]:
    """Accept, retry or reject the attempt; record it and its reward either way."""
    ctx = runtime.context
    start = ctx.clock()
    verdict = Verdict.from_dict(state["candidate_verdict"])
    current = _verdict(state.get("verdict"))
    step, attempt = state["step"], state["attempt"]
    reward = step_reward(verdict, current, ctx.reward, step=step)
    outcome = decide(verdict, current, attempt=attempt, max_retries=ctx.budgets.max_retries)
    record = _attempt_record(state, verdict, current, reward, outcome)
    ctx.on_event({"event": "attempt", **record})
    update: dict[str, Any] = {"outcome": outcome, "trajectory": [record]}
    if outcome == "retry":
        update |= {"attempt": attempt + 1, "feedback": state["candidate_verdict"]}
    else:
        finished = StepRecord(index=step, strategy=state["strategy"], status=str(verdict.status),
                              accepted=outcome == "accepted", speedup=verdict.speedup_eager, reward=reward,
                              reason=verdict.reason)
        update |= {"step": step + 1, "history": [dataclasses.asdict(finished)]}
    if outcome == "accepted":
        update |= {"program": state["candidate"], "verdict": state["candidate_verdict"]}
    return {**update, "elapsed_s": ctx.clock() - start}


def finish(state: OptimizeState, runtime: Runtime[Context]) -> dict[str, Any]:
    ctx = runtime.context
    ctx.on_event({"event": "finish", "stop_reason": state.get("stop_reason"), "steps": state["step"]})
    return {"finished": True}


# ---------------------------------------------------------------------------------------------------
# routers


def route_after_plan(state: OptimizeState) -> Literal["code", "finish"]:
    return "finish" if state.get("stop_reason") else "code"


def route_after_code(state: OptimizeState) -> Literal["verify", "gate"]:
    coder_failed = state.get("candidate") is None
    return "gate" if coder_failed else "verify"


def route_after_gate(state: OptimizeState) -> Literal["code", "plan"]:
    outcome = state.get("outcome")
    if outcome == "retry":
        return "code"
    if outcome in ("accepted", "rejected"):
        return "plan"
    raise ValueError(f"gate left an unknown outcome {outcome!r}")


# ---------------------------------------------------------------------------------------------------
# decisions


def decide(verdict: Verdict, current: Verdict | None, *, attempt: int, max_retries: int) -> Outcome:
    """Correct and not slower than the current program: accept. Failed with retries left: retry.
    Otherwise reject. Without timings (CPU interpreter) correct is enough."""
    if verdict.ok:
        return "accepted" if not _slower(verdict, current) else "rejected"
    return "retry" if attempt < max_retries else "rejected"


def _slower(verdict: Verdict, current: Verdict | None) -> bool:
    if current is None or current.candidate_ms is None or verdict.candidate_ms is None:
        return False
    return verdict.candidate_ms > current.candidate_ms


def _budget_spent(state: OptimizeState, ctx: Context) -> StopReason | None:
    budgets = ctx.budgets
    if state["step"] >= budgets.max_steps:
        return "max_steps"
    if budgets.time_limit_s is not None and state.get("elapsed_s", 0.0) >= budgets.time_limit_s:
        return "time_limit"
    return None


# ---------------------------------------------------------------------------------------------------
# records and conversions


def _attempt_record(state: OptimizeState, verdict: Verdict, current: Verdict | None, reward: float,
                    outcome: Outcome) -> dict[str, Any]:
    candidate = state.get("candidate")
    return {
        "step": state["step"],
        "attempt": state["attempt"],
        "strategy": state["strategy"],
        "outcome": outcome,
        "status": str(verdict.status),
        "message": verdict.message,
        "speedup_eager": verdict.speedup_eager,
        "speedup_vs_previous": speedup_over(verdict, current),
        "reward": reward,
        "wall_s": state["attempt_wall_s"],
        "usage": candidate["metadata"].get("usage") if candidate else state.get("coder_usage"),
        "digest": Program.from_dict(candidate).digest if candidate else None,
        "diff": _diff(state.get("program"), candidate),
        "verdict": verdict.to_dict(),
    }


def _diff(previous: dict[str, Any] | None, candidate: dict[str, Any] | None) -> str:
    if candidate is None:
        return ""
    before = (previous or {}).get("source", "")
    after = candidate["source"]
    lines = difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                 "a/kernel.py" if previous else "/dev/null", "b/kernel.py")
    return "".join(lines)


def _plan_state(state: OptimizeState, ctx: Context, program: Program | None,
                legal: list[Strategy]) -> PlanState:
    return PlanState(
        task=ctx.task,
        summary=summary_from_dict(state["summary"]),
        program=program,
        verdict=_verdict(state.get("verdict")),
        legal=legal,
        history=[StepRecord(**record) for record in state.get("history", [])],
        steps_left=ctx.budgets.max_steps - state["step"],
    )


def summary_from_dict(data: dict[str, Any]) -> TaskSummary:
    names = {f.name for f in dataclasses.fields(TaskSummary)}
    kwargs = {k: v for k, v in data.items() if k in names}
    kwargs["inputs"] = [TensorInfo(**t) for t in data["inputs"]]
    kwargs["outputs"] = [TensorInfo(**t) for t in data["outputs"]]
    return TaskSummary(**kwargs)


def _program(data: dict[str, Any] | None) -> Program | None:
    return Program.from_dict(data) if data else None


def _verdict(data: dict[str, Any] | None) -> Verdict | None:
    return Verdict.from_dict(data) if data else None
