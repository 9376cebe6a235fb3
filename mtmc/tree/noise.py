"""The noise of a tree's times, from the `retime` rows that `mtmc tree retime` appends (retime.py).

    report = noise_report(tree, tasks, top=5)
    print(noise_markdown(report))

Per task, each of its `top` fastest ok programs that was re-timed gets spread = max / min over its
recorded `candidate_ms` and its re-timed ones (ok verdicts with a time only). Only times from the
recording's device count: the same program on another GPU model differs by more than noise, so such
rows are left out and counted. A re-timed verdict that is not ok (a flaky program, a timeout) has no
time; it is counted as `failed`. The task's spread is the largest of its programs'. The summary:
tasks re-timed, the share of them with spread <= NOISE_LIMIT, the median and the largest spread.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

from mtmc.bench.results import num
from mtmc.tasks import Task
from mtmc.tree.format import Row
from mtmc.tree.index import Tree
from mtmc.tree.retime import top_nodes

NOISE_LIMIT = 1.05  # a tree whose top programs' times move by at most 5% ranks them reliably


def program_noise(node: Row, retimes: Sequence[Row]) -> dict[str, Any]:
    """One program's recorded time against its re-timed ones; spread None until one re-timed time."""
    here = [row for row in retimes if row["device"] == node["device"]]
    retimed = [row["candidate_ms"] for row in here if row["status"] == "ok" and row["candidate_ms"]]
    times = [node["candidate_ms"], *retimed]
    return {"digest": node["digest"], "recorded_ms": node["candidate_ms"], "retimed_ms": retimed,
            "failed": sum(row["status"] != "ok" for row in here), "other_device": len(retimes) - len(here),
            "spread": max(times) / min(times) if retimed else None}


def task_noise(tree: Tree, task: Task, top: int) -> dict[str, Any]:
    programs = [program_noise(node, tree.retimed(task.name, node["digest"]))
                for node in top_nodes(tree, task.name, top)]
    spreads = [p["spread"] for p in programs if p["spread"] is not None]
    return {"task": task.name, "programs": programs, "retimed_programs": len(spreads),
            "spread": max(spreads, default=None)}


def noise_report(tree: Tree, tasks: Sequence[Task], top: int) -> dict[str, Any]:
    """The report as data: per task its programs' spreads, and the summary over the re-timed tasks."""
    results = [task_noise(tree, task, top) for task in tasks]
    spreads = [r["spread"] for r in results if r["spread"] is not None]
    within = sum(spread <= NOISE_LIMIT for spread in spreads)
    summary = {"tasks": len(results), "retimed_tasks": len(spreads), "limit": NOISE_LIMIT,
               "within_limit": within, "share_within_limit": within / len(spreads) if spreads else None,
               "median_spread": statistics.median(spreads) if spreads else None,
               "max_spread": max(spreads, default=None)}
    devices = sorted({row["device"] for row in tree.nodes.values()})
    return {"meta": {"tree": str(tree.path), "top": top, "devices": devices}, "summary": summary,
            "tasks": results}


def noise_markdown(report: dict[str, Any]) -> str:
    meta, summary = report["meta"], report["summary"]
    share = summary["share_within_limit"]
    devices = ", ".join(meta["devices"]) or "none"
    lines = [f"# mtmc tree retime: {meta['tree']}", "",
             f"Top {meta['top']} programs per task re-timed (device: {devices}). Spread: max/min of a "
             "program's recorded and re-timed times; a task's: its largest.", "",
             f"- tasks re-timed: {summary['retimed_tasks']} of {summary['tasks']}",
             f"- spread <= {summary['limit']}: {summary['within_limit']} "
             f"({'n/a' if share is None else f'{100 * share:.1f}%'})",
             f"- median spread: {num(summary['median_spread'], '.4f')}, "
             f"max: {num(summary['max_spread'], '.4f')}", "",
             "| task | programs re-timed | spread | worst program | failed re-timings | other device |",
             "|---|---:|---:|---|---:|---:|"]
    for r in report["tasks"]:
        worst = max((p for p in r["programs"] if p["spread"] is not None), key=lambda p: p["spread"],
                    default=None)
        lines.append(f"| {r['task']} | {r['retimed_programs']} of {len(r['programs'])} | "
                     f"{num(r['spread'], '.4f')} | {worst['digest'][:12] if worst else '-'} | "
                     f"{sum(p['failed'] for p in r['programs'])} | "
                     f"{sum(p['other_device'] for p in r['programs'])} |")
    if not summary["retimed_tasks"]:
        lines += ["", "No task has a re-timed time: run `mtmc tree retime` on a GPU (a tree recorded or "
                  "re-timed on the CPU interpreter has no times)."]
    return "\n".join(lines) + "\n"
