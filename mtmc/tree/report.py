"""`mtmc tree report`: how far each planner gets against the best program the tree holds, per split.

    report = headroom(tree, tasks, {"heuristic": [HeuristicPlanner()], "random": seeded}, max_steps=4)
    print(report_markdown(report))

Methods, each per task:
- oracle@k: the fastest `ok` program within k steps of the port (k = 1 .. the tree's depth). It
  ignores the gate (a path through a slower program counts), so it bounds what a planner with k
  steps can reach; its calls are what finding it by enumeration costs: every program within k steps.
- each planner (several runs when it takes a seed): an episode on `TreeEnv`, the graph's loop with
  the recorded verdicts (mtmc/tree/env.py), so its calls are the verifier calls a live run makes.

`anytime`: per method, the best speedup so far after c verifier calls per task (`plot_anytime`).

Each cell: geomean final / port speedup (port time over the final program's), % of the deepest
oracle (geomean of oracle time over final time), and verifier calls per task, over the split's
tasks whose port is recorded ok with a time. Without timings (a tree recorded on the CPU) speedups
are n/a, never 1.0.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from mtmc.bench.metrics import geomean
from mtmc.bench.results import num, times
from mtmc.protocols import Planner
from mtmc.tasks import Task
from mtmc.tree.env import TreeEnv, run_episode
from mtmc.tree.index import Tree

Runs = list[dict[str, Any]]  # one per episode: final_ms, calls, steps, stop_reason, trace


def oracle(tree: Tree, task: str, k: int) -> dict[str, Any]:
    """The fastest ok program within k steps of the port, and how many programs that is; its trace is
    the best so far as breadth-first enumeration judges them (level by level, in file order)."""
    nodes = sorted((row for row in tree.task_nodes(task) if row["depth"] <= k), key=lambda row: row["depth"])
    trace, best = [], None
    for calls, row in enumerate(nodes, 1):
        if row["status"] == "ok" and row["candidate_ms"]:
            best = row["candidate_ms"] if best is None else min(best, row["candidate_ms"])
        trace.append((calls, best))
    return {"final_ms": best, "calls": len(nodes), "steps": k, "stop_reason": None, "trace": trace}


def tree_depth(tree: Tree) -> int:
    return max((row["depth"] for row in tree.nodes.values()), default=0)


def task_runs(tree: Tree, env: TreeEnv, task: Task, planners: dict[str, list[Planner]],
              ks: Sequence[int]) -> dict[str, Any]:
    """Every method's runs on one task."""
    port = tree.port(task.name)
    runs: dict[str, Runs] = {f"oracle@{k}": [oracle(tree, task.name, k)] for k in ks}
    for name, seeded in planners.items():
        runs[name] = []
        for planner in seeded:
            episode = run_episode(env, planner, task.name)
            runs[name].append({"final_ms": episode.final_ms, "calls": episode.calls, "steps": episode.steps,
                               "stop_reason": episode.stop_reason, "trace": list(episode.trace)})
    port_ms = port["candidate_ms"] if port is not None and port["status"] == "ok" else None
    return {"task": task.name, "split": task.split or "none", "port_ms": port_ms, "runs": runs}


def cell(results: list[dict[str, Any]], method: str, best: str) -> dict[str, Any]:
    """One method over a split's tasks (with a timed port): speedup, % of the best oracle, calls."""
    timed = [r for r in results if r["port_ms"]]
    pairs = [(r, run) for r in timed for run in r["runs"][method]]
    calls = [run["calls"] for r in results for run in r["runs"][method]]
    runs_per_task = len(calls) / len(results) if results else 0
    best_ms = {r["task"]: r["runs"][best][0]["final_ms"] for r in timed}
    return {
        "tasks": len(results), "timed_tasks": len(timed), "runs_per_task": runs_per_task,
        "geomean_speedup": geomean(_ratio(r["port_ms"], run["final_ms"]) for r, run in pairs),
        "pct_of_oracle": _pct(geomean(_ratio(best_ms[r["task"]], run["final_ms"]) for r, run in pairs)),
        "calls_per_task": statistics.fmean(calls) if calls else None,
        "runs_without_program": sum(run["final_ms"] is None for _, run in pairs),
    }


def headroom(tree: Tree, tasks: Sequence[Task], planners: dict[str, list[Planner]], *, max_steps: int = 4,
             max_retries: int = 1, ks: Sequence[int] | None = None) -> dict[str, Any]:
    """The report as data: per task runs, and per split (and `all`) a cell per method."""
    ks = list(ks or range(1, tree_depth(tree) + 1)) or [0]
    env = TreeEnv(tree, tasks, max_steps=max_steps, max_retries=max_retries)
    results = [task_runs(tree, env, task, planners, ks) for task in tasks]
    methods = [f"oracle@{k}" for k in ks] + list(planners)
    best = f"oracle@{max(ks)}"
    splits = sorted({r["split"] for r in results}) + ["all"]
    table = {split: {m: cell([r for r in results if split in ("all", r["split"])], m, best) for m in methods}
             for split in splits}
    curves = {m: anytime(results, m) for m in [best, *planners]}
    meta = {"tree": str(tree.path), "max_steps": max_steps, "max_retries": max_retries,
            "depth": tree_depth(tree),
            "runs": {name: len(seeded) for name, seeded in planners.items()},
            "devices": sorted({row["device"] for row in tree.nodes.values()})}
    return {"meta": meta, "methods": methods, "splits": table, "anytime": curves, "tasks": results}


def anytime(results: list[dict[str, Any]], method: str) -> list[float | None]:
    """Best final/port speedup so far after c verifier calls (c = 1, 2, ...), geomean over the runs of
    the tasks with a timed port; a run that ended keeps its last program. None until every run has a
    program."""
    runs = [(r["port_ms"], run["trace"]) for r in results if r["port_ms"] for run in r["runs"][method]]
    most = max((trace[-1][0] for _, trace in runs if trace), default=0)
    curve = []
    for c in range(1, most + 1):
        best = [_best_by(trace, c) for _, trace in runs]
        ok = all(ms is not None for ms in best)
        curve.append(geomean(port / ms for (port, _), ms in zip(runs, best, strict=True)) if ok else None)
    return curve


def _best_by(trace: list[tuple[int, float | None]], calls: int) -> float | None:
    """The accepted program's time after `calls` calls (the gate only accepts programs not slower)."""
    reached = [ms for spent, ms in trace if spent <= calls and ms is not None]
    return reached[-1] if reached else None


def plot_anytime(path: Any, report: dict[str, Any]) -> None:
    """The anytime curves: best speedup so far against verifier calls per task, log x."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.add_subplot()
    drawn = False
    for method, curve in report["anytime"].items():
        points = [(c, v) for c, v in enumerate(curve, 1) if v is not None]
        if points:
            ax.plot(*zip(*points, strict=True), label=method, drawstyle="steps-post")
            drawn = True
    if drawn:
        ax.set_xscale("log")
        ax.set_xlabel("verifier calls per task")
        ax.set_ylabel("geomean best final/port so far")
        ax.legend(loc="best")
    else:
        ax.text(0.5, 0.5, "no timings: nothing to plot", ha="center", va="center", transform=ax.transAxes)
    ax.set_title("anytime: best speedup against calls")
    fig.savefig(path, dpi=100)


# ---------------------------------------------------------------------------------------------------
# markdown


def report_markdown(report: dict[str, Any]) -> str:
    meta = report["meta"]
    runs = ", ".join(f"{name} x{n}" for name, n in meta["runs"].items())
    lines = [f"# mtmc tree report: {meta['tree']}", "",
             f"Tree depth {meta['depth']} (device: {', '.join(meta['devices']) or 'none'}); planners "
             f"({runs}) at max_steps {meta['max_steps']}, max_retries {meta['max_retries']}.", "",
             "| split | method | tasks (timed port) | geomean final/port | % of oracle | calls per task |",
             "|---|---|---:|---:|---:|---:|"]
    best = next(m for m in reversed(report["methods"]) if m.startswith("oracle@"))
    for split, cells in report["splits"].items():
        for method in report["methods"]:
            c = cells[method]
            lines.append(f"| {split} | {method} | {c['tasks']} ({c['timed_tasks']}) | "
                         f"{times(c['geomean_speedup'])} | {num(c['pct_of_oracle'], '.1f')} | "
                         f"{num(c['calls_per_task'], '.1f')} |")
    lines += ["", f"% of oracle: geomean of {best} time over the final program's time."]
    if not any(r["port_ms"] for r in report["tasks"]):
        lines.append("No timings: no port in the tree has a time (recorded on the CPU interpreter?), so "
                     "speedups and % of oracle are n/a; calls still count.")
    lines.append("")
    lines += _task_table(report)
    return "\n".join(lines) + "\n"


def _task_table(report: dict[str, Any]) -> list[str]:
    methods = report["methods"]
    lines = ["## Tasks (final/port speedup; planners with several runs: geomean, mean calls)", "",
             "| task | split | port ms | " + " | ".join(methods) + " |",
             "|---|---|---:|" + "---:|" * len(methods)]
    for r in report["tasks"]:
        cells = []
        for method in methods:
            runs = r["runs"][method]
            speedup = geomean(_ratio(r["port_ms"], run["final_ms"]) for run in runs)
            calls = statistics.fmean(run["calls"] for run in runs)
            cells.append(f"{times(speedup)} ({calls:.1f})")
        head = f"| {r['task']} | {r['split']} | {num(r['port_ms'], '.4f')} | "
        lines.append(head + " | ".join(cells) + " |")
    return lines


def _ratio(numerator: float | None, denominator: float | None) -> float | None:
    return numerator / denominator if numerator and denominator else None


def _pct(fraction: float | None) -> float | None:
    return None if fraction is None else 100.0 * fraction
