"""Benchmark folders side by side (e.g. the same suite under two or more planners).

    mtmc bench compare=runs/bench/heuristic,runs/bench/random,runs/bench/lm
    compare_runs("runs/bench/heuristic", "runs/bench/random", out_dir="runs/bench/cmp")

Reads each folder's results.json; the runs are labelled A, B, C, ... in the order given. Aggregates
are recomputed over the tasks *every* run holds, so the columns always describe the same task set;
tasks that some run lacks are listed, not mixed in. Writes compare.md, compare.json and compare.png
(fast_p curves, and per-task speedups of each run against A).
"""

from __future__ import annotations

import json
import math
import statistics
import string
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mtmc.bench.metrics import FAST_P, Row, aggregate
from mtmc.bench.results import RESULTS_JSON, draw_fast_p, num, pct, times
from mtmc.report import TRAJECTORY, write_atomic

COMPARE_MD = "compare.md"
COMPARE_JSON = "compare.json"
COMPARE_PLOT = "compare.png"
LINESTYLES = ("-", "--", ":", "-.")


def load_results(folder: str | Path) -> dict[str, Any]:
    path = Path(folder) / RESULTS_JSON
    if not path.is_file():
        raise FileNotFoundError(f"{folder}: no {RESULTS_JSON}; is it a `mtmc bench` folder? (a bench that "
                                "was cut short writes it when run again with the same out=)")
    return json.loads(path.read_text())


def compare_runs(*runs: str | Path, out_dir: str | Path | None = None,
                 ps: Sequence[float] = FAST_P) -> dict[str, Any]:
    if not 2 <= len(runs) <= len(string.ascii_uppercase):
        raise ValueError(f"compare takes 2 to 26 benchmark folders, got {len(runs)}")
    labels = list(string.ascii_uppercase[:len(runs)])
    results = {label: load_results(run) for label, run in zip(labels, runs, strict=True)}
    rows = {label: {r["task"]: r for r in result["tasks"]} for label, result in results.items()}
    common = [name for name in rows["A"] if all(name in rows[label] for label in labels)]
    result = {
        "runs": {label: str(run) for label, run in zip(labels, runs, strict=True)},
        "meta": {label: results[label]["meta"] for label in labels},
        "common": common,
        "not_in_all": {label: [n for n in rows[label] if n not in common] for label in labels},
        "aggregates": {label: aggregate([rows[label][n] for n in common], ps) for label in labels},
        "tasks": [{"task": n, **{label: rows[label][n] for label in labels}} for n in common],
        "timing_agreement": {label: timing_agreement(Path(runs[0]), Path(run), common)
                             for label, run in zip(labels[1:], runs[1:], strict=True)},
    }
    result["markdown"] = compare_markdown(result)
    if out_dir is not None:
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        write_atomic(out_dir / COMPARE_MD, result["markdown"])
        write_atomic(out_dir / COMPARE_JSON, json.dumps(result, indent=2) + "\n")
        plot_compare(out_dir / COMPARE_PLOT, {label: [rows[label][n] for n in common] for label in labels})
    return result


def compare_markdown(result: dict[str, Any]) -> str:
    labels = list(result["runs"])
    lines = ["# mtmc bench compare", ""]
    for label in labels:
        meta = result["meta"][label]
        lines.append(f"- **{label}**: `{result['runs'][label]}`: suite {meta['suite']}, planner "
                     f"`{meta['planner']}`, coder `{meta['coder']}`, verifier `{meta['verifier']}`")
    held = "both runs hold" if len(labels) == 2 else f"all {len(labels)} runs hold"
    # with two runs a task not in both is "only in" one of them; with more it may be in several
    word = "only in {}" if len(labels) == 2 else "{} also has"
    extra = "; ".join(f"{word.format(label)}: {', '.join(names)}"
                      for label, names in result["not_in_all"].items() if names)
    lines += ["", f"Aggregates over the {len(result['common'])} tasks {held}"
              + (f" ({extra})." if extra else "."), ""]
    lines += ["| metric | " + " | ".join(labels) + " |", "|---|" + "---:|" * len(labels)]
    aggregates = [result["aggregates"][label] for label in labels]
    lines += [f"| {name} | " + " | ".join(value(agg) for agg in aggregates) + " |"
              for name, value in _metrics(aggregates[0])]
    columns = [("correct", _yes), ("x eager", lambda r: times(r["speedup_eager"])),
               ("x compile", lambda r: times(r["speedup_compiled"])),
               ("% roofline", lambda r: num(r["roofline_pct"], ".1f")),
               ("steps", lambda r: num(r["steps"], "d"))]
    header = [f"{name} {label}" for name, _ in columns for label in labels]
    aligns = ["---" if name == "correct" else "---:" for name, _ in columns for _ in labels]
    lines += _agreement_lines(result["timing_agreement"])
    lines += ["", "## Tasks", "", "| task | " + " | ".join(header) + " |", "|---|" + "|".join(aligns) + "|"]
    for entry in result["tasks"]:
        cells = [cell(entry[label]) for _, cell in columns for label in labels]
        lines.append(f"| {entry['task']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def timing_agreement(run_a: Path, run_b: Path, tasks: Sequence[str]) -> dict[str, Any] | None:
    """How far B's time for a program is from A's for the very same program (same task, same digest),
    next to the same comparison for the baselines (eager and torch.compile, which are the same
    programs in both runs by construction). Runs on one GPU and on several should agree to within
    run-to-run noise: timing on one GPU must not be disturbed by work on another. None where nothing
    was timed in both."""
    candidates, baselines = [], []
    for task in tasks:
        a, b = _timed_verdicts(run_a / task), _timed_verdicts(run_b / task)
        candidates += [(b[d]["candidate_ms"] / a[d]["candidate_ms"], task) for d in a.keys() & b.keys()]
        if a and b:  # every verdict of a task reports the same baseline times (timed once per task)
            first_a, first_b = next(iter(a.values())), next(iter(b.values()))
            baselines += [(first_b[key] / first_a[key], task) for key in ("eager_ms", "compiled_ms")
                          if first_a.get(key) and first_b.get(key)]
    if not candidates:
        return None
    return {"candidates": _deviation(candidates), "baselines": _deviation(baselines) if baselines else None}


def _deviation(ratios: list[tuple[float, str]]) -> dict[str, Any]:
    """Median and worst of B/A ratios, by distance from 1 on a log scale (1.05x and 1/1.05x alike)."""
    distances = sorted(abs(math.log(r)) for r, _ in ratios)
    worst, task = max(ratios, key=lambda r: abs(math.log(r[0])))
    return {"pairs": len(ratios), "median_deviation": math.exp(statistics.median(distances)),
            "worst_ratio": worst, "worst_task": task}


def _timed_verdicts(folder: Path) -> dict[str, dict[str, Any]]:
    """digest -> verdict of each timed `ok` verdict in a task's trajectory (its last, if judged twice)."""
    path = folder / TRAJECTORY
    if not path.is_file():
        return {}
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    timed = [r for r in records if r.get("digest") and (r.get("verdict") or {}).get("status") == "ok"]
    return {r["digest"]: r["verdict"] for r in timed if r["verdict"].get("candidate_ms")}


def _metrics(agg: dict[str, Any]) -> list[tuple[str, Any]]:
    """(label, how to print it from an aggregates dict), in table order."""
    rows = [("correct", lambda g: f"{g['correct']}/{g['tasks']} ({num(pct(g['correct_rate']), '.1f')}%)")]
    for base, name in (("eager", "eager"), ("compiled", "torch.compile")):
        for p in agg["fast_p"][base]:
            rows.append((f"fast_{p} over {name}",
                         lambda g, base=base, p=p: _share(g["fast_p"][base][p])))
    rows += [("geomean speedup over eager (correct)", lambda g: times(g["geomean_speedup_eager"])),
             ("geomean speedup over torch.compile (correct)", lambda g: times(g["geomean_speedup_compiled"])),
             ("median % of roofline (correct)", lambda g: num(g["median_roofline_pct"], ".1f")),
             ("verifier calls", lambda g: str(g["verifier_calls"])),
             ("verdicts ok", lambda g: num(g["verified"], "d")),
             ("wall time (tasks' own times, summed)", lambda g: f"{g['wall_s']:.1f} s"),
             ("elapsed, first start to last finish", lambda g: _seconds(g["elapsed_s"])),
             ("verified candidates per minute", lambda g: num(g["verified_per_min"], ".2f"))]
    return rows


def _agreement_lines(agreements: dict[str, dict[str, Any] | None]) -> list[str]:
    lines = []
    for label, agreement in agreements.items():
        if agreement is None:
            continue
        lines += ["", f"Same programs timed in A and {label} ({label}/A: median distance from 1, worst):"]
        for what in ("candidates", "baselines"):
            if d := agreement[what]:
                lines.append(f"- {what}: {d['pairs']} pairs, median {d['median_deviation']:.3f}x, worst "
                             f"{d['worst_ratio']:.3f}x ({d['worst_task']})")
    return lines


def _seconds(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f} s"


def _share(fraction: float | None) -> str:
    return "n/a" if fraction is None else f"{100 * fraction:.1f}%"


def _yes(row: Row) -> str:
    return "yes" if row["correct"] else row["status"]


def plot_compare(path: Path, rows: dict[str, Sequence[Row]]) -> None:
    """fast_p curves of every run (one line style each), and each run's per-task speedups against A's."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 4.5), layout="constrained")
    left, right = fig.subplots(1, 2)
    styles = {label: LINESTYLES[i % len(LINESTYLES)] for i, label in enumerate(rows)}
    drawn = False
    for label, run_rows in rows.items():
        drawn = draw_fast_p(left, run_rows, label=f"{label} ", linestyle=styles[label]) or drawn
    left.set_title("fast_p: " + ", ".join(f"{label} {style}" for label, style in styles.items()))
    plotted = []
    others = [label for label in rows if label != "A"]
    for label in others:
        pairs = [(a["speedup_eager"], b["speedup_eager"], a["task"]) for a, b in
                 zip(rows["A"], rows[label], strict=True)
                 if a["speedup_eager"] is not None and b["speedup_eager"] is not None]
        if pairs:
            xs, ys, _ = zip(*pairs, strict=True)
            right.scatter(xs, ys, zorder=3, label=label)
            plotted += pairs
    if plotted:
        named = set()
        for x, y, name in plotted:  # each task named once, at its first point
            if name not in named:
                named.add(name)
                right.annotate(name, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
        top = max(max(x, y) for x, y, _ in plotted) * 1.1
        right.plot([0, top], [0, top], color="gray", linewidth=0.8)
        right.set_xlabel("A: speedup over eager")
        right.set_ylabel(" / ".join(others) + ": speedup over eager")
        right.set_title("per task (above the diagonal: faster than A); tasks correct in both")
        if len(others) > 1:
            right.legend(loc="best")
    for ax, empty in ((left, not drawn), (right, not plotted)):
        if empty:
            ax.text(0.5, 0.5, "no timings (CPU interpreter: correctness only)", ha="center", va="center",
                    transform=ax.transAxes)
    fig.savefig(path, dpi=100)
