"""One flat row per benchmarked task, and the suite's aggregates (KernelBench's fast_p and friends).

    row = task_row(task, result.result, result.trajectory, wall_s, calibrations)
    agg = aggregate(rows, ps=(1.0, 1.2, 1.5, 2.0))

fast_p (KernelBench score.py): the share of *all* tasks in the suite that are
correct and strictly faster than the baseline by more than p. Failed, errored and missing tasks stay
in the denominator, so a planner cannot look better by skipping hard tasks. The geomean speedup is
over correct tasks only, so it is a secondary number; read it next to the correctness rate.

On the CPU interpreter nothing is timed: speedups, fast_p, geomeans and roofline shares are None
("n/a" in the reports), never 0, so a correctness-only run is not mistaken for a slow one.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from typing import Any

from mtmc.bench.roofline import Calibration, floor_ms, pick
from mtmc.tasks import Task, summarize
from mtmc.verify.verifier import INTERPRETER_DEVICE

FAST_P = (1.0, 1.2, 1.5, 2.0)
BASELINES = ("eager", "compiled")

# Column order of results.csv; every row has exactly these keys.
ROW_FIELDS = (
    "task", "family", "split", "status", "correct",
    "candidate_ms", "port_ms", "eager_ms", "compiled_ms", "speedup_eager", "speedup_compiled",
    "floor_ms", "bound", "roofline_pct", "eager_roofline_pct", "compiled_roofline_pct", "flops", "bytes",
    "steps", "accepted_steps", "attempts", "verifier_calls", "verified", "unrecorded", "stop_reason",
    "return", "wall_s", "started", "finished", "device", "kernel", "flags", "error",
)

Row = dict[str, Any]


# ---------------------------------------------------------------------------------------------------
# rows


def task_row(task: Task, result: dict[str, Any], trajectory: list[dict[str, Any]], wall_s: float,
             calibrations: Sequence[Calibration]) -> Row:
    """The row of a finished optimize run (`result` is its result.json, `trajectory` its attempts)."""
    verdict = result["verdict"] or {}
    judged = [r for r in trajectory if r["digest"] is not None]  # attempts that reached the verifier
    device = judged[-1]["verdict"]["device"] if judged else None
    # The optimize graph summarized the task already (its first node), so this cannot fail here.
    summary = summarize(task)
    row = blank_row(task) | {
        "status": result["status"] if result["kernel"] else "no_program",
        "correct": result["kernel"] is not None and result["status"] == "ok",
        "candidate_ms": verdict.get("candidate_ms"),
        "port_ms": port_ms(trajectory),
        "eager_ms": verdict.get("eager_ms"),
        "compiled_ms": verdict.get("compiled_ms"),
        "speedup_eager": verdict.get("speedup_eager"),
        "speedup_compiled": verdict.get("speedup_compiled"),
        "flops": summary.flops,
        "bytes": summary.bytes_min,
        "steps": result["steps"],
        "accepted_steps": result["accepted_steps"],
        "attempts": result["attempts"],
        "verifier_calls": len(judged),
        "verified": sum((r["verdict"] or {}).get("status") == "ok" for r in judged),
        # verifier=replay: programs the tree did not hold (mtmc/tree/replay.py); 0 for a live verifier
        "unrecorded": sum((r["verdict"] or {}).get("status") == "unrecorded" for r in judged),
        "stop_reason": result["stop_reason"],
        "return": result["return"],
        "wall_s": round(wall_s, 3),
        "device": device,
        "kernel": f"{task.name}/{result['kernel']}" if result["kernel"] else None,
        "flags": "; ".join(verdict.get("flags") or []),
    }
    calibration = pick(calibrations, device)
    if calibration is not None:
        floor, bound = floor_ms(summary, task, calibration)
        row |= {"floor_ms": floor, "bound": bound, "roofline_pct": _pct(floor, row["candidate_ms"]),
                "eager_roofline_pct": _pct(floor, row["eager_ms"]),
                "compiled_roofline_pct": _pct(floor, row["compiled_ms"])}
    return row


def port_ms(trajectory: list[dict[str, Any]]) -> float | None:
    """The time of the first accepted program (the plain port, or the library call kept): what the
    planner's later steps are measured against."""
    first = next((r for r in trajectory if r["outcome"] == "accepted"), None)
    return (first["verdict"] or {}).get("candidate_ms") if first else None


def error_row(task: Task, message: str, wall_s: float) -> Row:
    """A task whose run raised (a broken reference, a harness failure): counted, not hidden."""
    return blank_row(task) | {"status": "error", "error": message, "wall_s": round(wall_s, 3)}


def broken_row(name: str, message: str) -> Row:
    """A suite file that does not load (its TaskError as `error`): a row, so the suite still counts it."""
    return dict.fromkeys(ROW_FIELDS) | {"task": name, "status": "error", "correct": False, "flags": "",
                                        "error": message}


def missing_row(task: Task) -> Row:
    """A task of the suite with no result yet (its worker died, or the run was cut short)."""
    return blank_row(task) | {"status": "missing"}


def blank_row(task: Task) -> Row:
    row: Row = dict.fromkeys(ROW_FIELDS)
    return row | {"task": task.name, "family": task.meta.get("family"), "split": task.split,
                  "correct": False, "flags": ""}


def _pct(floor: float | None, ms: float | None) -> float | None:
    return None if not ms or floor is None else 100.0 * floor / ms


# ---------------------------------------------------------------------------------------------------
# aggregates


def aggregate(rows: Sequence[Row], ps: Sequence[float] = FAST_P) -> dict[str, Any]:
    correct = [r for r in rows if r["correct"]]
    timed = is_timed(rows)
    return {
        "tasks": len(rows),
        "correct": len(correct),
        "correct_rate": len(correct) / len(rows) if rows else None,
        "errors": sum(r["status"] == "error" for r in rows),
        "missing": sum(r["status"] == "missing" for r in rows),
        "timed": timed,
        "fast_p": {base: {str(float(p)): fast_p(rows, p, base) if timed else None for p in ps}
                   for base in BASELINES},
        "geomean_speedup_eager": geomean(r["speedup_eager"] for r in correct),
        "geomean_speedup_compiled": geomean(r["speedup_compiled"] for r in correct),
        # the plain ports alone, over the same correct tasks: how much the planner's steps added
        "geomean_port_speedup_eager": geomean(_ratio(r["eager_ms"], r["port_ms"]) for r in correct),
        "geomean_port_speedup_compiled": geomean(_ratio(r["compiled_ms"], r["port_ms"]) for r in correct),
        "median_roofline_pct": _median(r["roofline_pct"] for r in correct),
        "steps": sum(r["steps"] or 0 for r in rows),
        "verifier_calls": sum(r["verifier_calls"] or 0 for r in rows),
        # None for results written before the column existed, not a misleading 0
        "verified": sum(r.get("verified") or 0 for r in rows)
        if any(r.get("verified") is not None for r in rows) else None,
        "unrecorded": sum(r.get("unrecorded") or 0 for r in rows),
        "wall_s": round(sum(r["wall_s"] or 0.0 for r in rows), 3),
        **throughput(rows),
    }


def throughput(rows: Sequence[Row]) -> dict[str, float | None]:
    """Elapsed time from the first task's start to the last one's finish, and verified candidates
    (verdicts `ok`) per minute of it: what several GPU workers speed up (`wall_s` sums the tasks'
    own times, so it does not shrink when they run side by side). A run resumed later spans the gap
    between its sessions too; compare runs made in one go."""
    spans = [(r["started"], r["finished"]) for r in rows if r.get("started") and r.get("finished")]
    if not spans:
        return {"elapsed_s": None, "verified_per_min": None}
    elapsed = max(end for _, end in spans) - min(start for start, _ in spans)
    verified = sum(r.get("verified") or 0 for r in rows if r.get("started") and r.get("finished"))
    per_min = 60.0 * verified / elapsed if elapsed > 0 else None
    return {"elapsed_s": round(elapsed, 3), "verified_per_min": per_min}


def fast_p(rows: Sequence[Row], p: float, baseline: str) -> float:
    """Share of all rows that are correct with a speedup over `baseline` strictly above p."""
    key = f"speedup_{baseline}"
    fast = sum(bool(r["correct"]) and r[key] is not None and r[key] > p for r in rows)
    return fast / len(rows) if rows else 0.0


def is_timed(rows: Sequence[Row]) -> bool:
    """Whether any task was judged by a verifier that times (anything but the CPU interpreter).

    Decided by the device and not by the presence of timings: on a GPU a suite where every task
    failed has no timings either, and its fast_p is an honest 0, not "n/a".
    """
    return any(r["device"] is not None and r["device"] != INTERPRETER_DEVICE for r in rows)


def geomean(values: Iterable[float | None]) -> float | None:
    logs = [math.log(v) for v in values if v is not None and v > 0]
    return math.exp(sum(logs) / len(logs)) if logs else None


def _ratio(baseline_ms: float | None, ms: float | None) -> float | None:
    return baseline_ms / ms if baseline_ms and ms else None


def _median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None
