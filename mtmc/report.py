"""The run folder's outputs, written from a finished optimize state (never from live objects).

    kernel.py         the final accepted ModelNew source, importable as is (absent if none was accepted)
    trajectory.jsonl  one JSON line per coder attempt, in order
    report.md         task summary, a table of attempts, the final verdict
    speedup.png       speedup over eager per step (reward per step where there are no timings)
    result.json       the numbers a benchmark or a script needs

Everything is a function of the state, so a resumed run writes exactly what an uninterrupted one
would; wall-clock numbers appear only in trajectory.jsonl (`wall_s`) and result.json (`elapsed_s`).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from mtmc.graph.nodes import summary_from_dict
from mtmc.graph.state import OptimizeState

KERNEL = "kernel.py"
TRAJECTORY = "trajectory.jsonl"
REPORT = "report.md"
PLOT = "speedup.png"
RESULT = "result.json"


def write_outputs(out_dir: Path, state: OptimizeState, budgets: dict[str, Any]) -> dict[str, Any]:
    """Write every output file; returns the result.json content."""
    program = state.get("program")
    if program:
        write_atomic(out_dir / KERNEL, program["source"])
    trajectory = state.get("trajectory", [])
    write_atomic(out_dir / TRAJECTORY, "".join(json.dumps(r, sort_keys=True) + "\n" for r in trajectory))
    result = result_dict(state, budgets)
    write_atomic(out_dir / RESULT, json.dumps(result, indent=2, sort_keys=True) + "\n")
    write_atomic(out_dir / REPORT, report_markdown(state, result))
    plot_speedup(out_dir / PLOT, state)
    return result


def result_dict(state: OptimizeState, budgets: dict[str, Any]) -> dict[str, Any]:
    verdict = state.get("verdict")
    history = state.get("history", [])
    return {
        "task": state["summary"]["name"],
        "kernel": KERNEL if state.get("program") else None,
        "stop_reason": state.get("stop_reason"),
        "steps": len(history),
        "accepted_steps": sum(r["accepted"] for r in history),
        "attempts": len(state.get("trajectory", [])),
        "return": sum(r["reward"] for r in history),
        "status": verdict["status"] if verdict else None,
        "speedup_eager": verdict["speedup_eager"] if verdict else None,
        "speedup_compiled": verdict["speedup_compiled"] if verdict else None,
        "verdict": verdict,
        "usage": total_usage(state.get("trajectory", [])),
        "elapsed_s": state.get("elapsed_s", 0.0),
        "budgets": budgets,
    }


def total_usage(trajectory: list[dict[str, Any]]) -> dict[str, int]:
    """Token counts summed over every attempt whose coder reported them."""
    total: Counter[str] = Counter()
    for record in trajectory:
        for key, value in (record.get("usage") or {}).items():
            if isinstance(value, int | float):
                total[key] += value
    return dict(total)


# ---------------------------------------------------------------------------------------------------
# report.md


def report_markdown(state: OptimizeState, result: dict[str, Any]) -> str:
    summary = summary_from_dict(state["summary"])
    lines = [f"# mtmc optimize: {summary.name}", "", summary.one_line(), ""]
    lines += ["| tensor | shape | dtype |", "|---|---|---|"]
    lines += [f"| input {i} | {t.shape} | {t.dtype} |" for i, t in enumerate(summary.inputs)]
    lines += [f"| output {i} | {t.shape} | {t.dtype} |" for i, t in enumerate(summary.outputs)]
    lines += ["", "## Steps", "",
              "| step | attempt | strategy | outcome | status | speedup vs eager | reward | note |",
              "|---:|---:|---|---|---|---:|---:|---|"]
    for r in state.get("trajectory", []):
        lines.append(f"| {r['step']} | {r['attempt']} | `{r['strategy']}` | {r['outcome']} | {r['status']} | "
                     f"{_x(r['speedup_eager'])} | {r['reward']:+.3f} | {_cell(r['message'])} |")
    lines += ["", "## Result", "", _result_sentence(result), ""]
    verdict = result["verdict"]
    if verdict:
        lines += ["| verdict | value |", "|---|---|"]
        for key in ("status", "device", "speedup_eager", "speedup_compiled", "candidate_ms", "eager_ms",
                    "compiled_ms", "roofline_ms", "triton_share", "max_abs_error", "rel_error"):
            lines.append(f"| {key} | {_cell(verdict.get(key))} |")
        lines.append("")
        if verdict.get("candidate_ms") is None:
            lines += ["No timings (CPU interpreter): the verdict proves correctness only.", ""]
    return "\n".join(lines)


def _result_sentence(result: dict[str, Any]) -> str:
    head = (f"Stopped ({result['stop_reason']}) after {result['steps']} steps, {result['accepted_steps']} "
            f"accepted, {result['attempts']} coder attempts; return {result['return']:+.3f}.")
    if result["kernel"] is None:
        return head + " No program was accepted, so there is no kernel.py."
    return head + f" Final program: `{result['kernel']}`, speedup vs eager {_x(result['speedup_eager'])}."


def _x(speedup: float | None) -> str:
    return "-" if speedup is None else f"{speedup:.2f}x"


def _cell(value: Any) -> str:
    if value is None or value == "":
        return "-"
    text = str(value).strip().splitlines()[0] if str(value).strip() else "-"
    text = text if len(text) <= 80 else text[:77] + "..."
    return text.replace("|", "\\|")


# ---------------------------------------------------------------------------------------------------
# speedup.png


def plot_speedup(path: Path, state: OptimizeState) -> None:
    # Figure without pyplot: no global backend state, renders through Agg in any process.
    from matplotlib.figure import Figure

    trajectory = state.get("trajectory", [])
    timed = any(r["speedup_eager"] is not None for r in trajectory)
    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.add_subplot()
    colors = {"accepted": "tab:green", "retry": "tab:orange", "rejected": "tab:red"}
    name = state["summary"]["name"]
    if timed:
        _plot_timed(ax, trajectory, colors)
        ax.set_ylabel("speedup over eager")
        ax.set_title(f"{name}: speedup over eager per step")
    else:
        for outcome, color in colors.items():
            points = [(r["step"], r["reward"]) for r in trajectory if r["outcome"] == outcome]
            if points:
                ax.scatter(*zip(*points, strict=True), color=color, label=outcome, zorder=3)
        steps = state.get("history", [])
        returns = [sum(r["reward"] for r in steps[: i + 1]) for i in range(len(steps))]
        ax.plot(range(len(steps)), returns, color="gray", drawstyle="steps-post", label="return")
        ax.axhline(0.0, color="black", linewidth=0.5)
        ax.set_ylabel("reward")
        ax.set_title(f"{name}: reward per step (no timings on CPU: correctness only)")
    ax.set_xlabel("step")
    if trajectory:
        ax.legend(loc="best")
    fig.savefig(path, dpi=100)


def _plot_timed(ax: Any, trajectory: list[dict[str, Any]], colors: dict[str, str]) -> None:
    for outcome, color in colors.items():
        points = [(r["step"], r["speedup_eager"]) for r in trajectory
                  if r["outcome"] == outcome and r["speedup_eager"] is not None]
        if points:
            ax.scatter(*zip(*points, strict=True), color=color, label=outcome, zorder=3)
    failed = [r["step"] for r in trajectory if r["status"] != "ok"]
    if failed:
        ax.scatter(failed, [0.0] * len(failed), color="tab:red", marker="x", label="failed (drawn at 0)")
    best, line = None, []
    for r in trajectory:
        if r["outcome"] == "accepted" and r["speedup_eager"] is not None:
            best = r["speedup_eager"]
        line.append((r["step"], best if best is not None else float("nan")))
    ax.plot(*zip(*line, strict=True), color="gray", drawstyle="steps-post", label="current program")
    ax.axhline(1.0, color="black", linewidth=0.5)


def write_atomic(path: Path, text: str) -> None:
    """Readers see the old file or the new one, never half of one (a crash mid-write included)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tmp.open("w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
