"""The eval table: the trained planner against the random and heuristic planners, on eval-split tasks.

    table = evaluate_planners(tasks, out_dir / "eval",
                              planners={"lm": {...}, "random": {...}, "heuristic": {...}},  # `_target_`s
                              roles={"coder": {...}, "verifier": {...}}, budgets=Budgets(),
                              reward={"_target_": "mtmc.reward.RewardConfig"}, gpus=[])

Each planner goes through `mtmc bench`'s runner (mtmc/bench/run.py) over the same tasks with the same
coder, verifier and budgets, into a bench folder of its own (`<out>/<planner>/`: results.md and one
optimize run folder per task, resumable), and eval.csv / eval.md put their aggregates side by side.
Only eval-split tasks are accepted: the trained planner never saw them (mtmc/train/data.py refuses
them as training data).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from mtmc.bench import run_bench, write_report
from mtmc.bench.metrics import Row
from mtmc.bench.results import num, times
from mtmc.budgets import Budgets
from mtmc.report import write_atomic
from mtmc.tasks import Task
from mtmc.train.data import EVAL_SPLIT

EVAL_CSV = "eval.csv"
EVAL_MD = "eval.md"
COLUMNS = ("planner", "tasks", "correct", "correct_rate", "fast_1.0_eager", "geomean_speedup_eager",
           "geomean_speedup_compiled", "mean_return", "steps", "verifier_calls", "wall_s")


def evaluate_planners(tasks: Sequence[Task], out_dir: Path, *, planners: Mapping[str, dict[str, Any]],
                      roles: dict[str, dict[str, Any]], budgets: Budgets, reward: dict[str, Any],
                      gpus: Sequence[str] = (),
                      console: Console | None = None) -> list[dict[str, Any]]:
    not_eval = [t.name for t in tasks if t.split != EVAL_SPLIT]
    if not_eval or not tasks:
        raise ValueError(f"the eval table runs on eval-split tasks only; got {not_eval or 'none'}")
    table = []
    for name, planner in planners.items():
        folder = out_dir / name
        rows = run_bench(tasks, folder, roles={"planner": planner, **roles}, budgets=budgets, reward=reward,
                         gpus=gpus, console=console)
        meta = {"suite": f"eval ({name})", "planner": planner["_target_"],
                "coder": roles["coder"]["_target_"], "verifier": roles["verifier"]["_target_"],
                "budgets": budgets.keywords()}
        aggregates = write_report(folder, rows, meta, ps=[1.0])
        table.append(table_row(name, rows, aggregates))
    write_atomic(out_dir / EVAL_CSV, table_csv(table))
    write_atomic(out_dir / EVAL_MD, table_markdown(table, [t.name for t in tasks]))
    return table


def table_row(planner: str, rows: Sequence[Row], aggregates: dict[str, Any]) -> dict[str, Any]:
    returns = [r["return"] for r in rows if r["return"] is not None]
    return {
        "planner": planner,
        "tasks": aggregates["tasks"],
        "correct": aggregates["correct"],
        "correct_rate": aggregates["correct_rate"],
        "fast_1.0_eager": aggregates["fast_p"]["eager"]["1.0"],  # None without timings (CPU)
        "geomean_speedup_eager": aggregates["geomean_speedup_eager"],
        "geomean_speedup_compiled": aggregates["geomean_speedup_compiled"],
        "mean_return": sum(returns) / len(returns) if returns else None,
        "steps": aggregates["steps"],
        "verifier_calls": aggregates["verifier_calls"],
        "wall_s": aggregates["wall_s"],
    }


def table_csv(table: Sequence[dict[str, Any]]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(table)
    return buffer.getvalue()


def table_markdown(table: Sequence[dict[str, Any]], task_names: Sequence[str]) -> str:
    lines = [f"# Planners on {len(task_names)} eval-split task(s)", "", ", ".join(task_names), "",
             "| planner | correct | fast_1.0 over eager | geomean x eager | geomean x compile | mean return "
             "| steps | verifier calls | wall s |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in table:
        fast = "n/a" if r["fast_1.0_eager"] is None else f"{100 * r['fast_1.0_eager']:.1f}%"
        lines.append(f"| {r['planner']} | {r['correct']}/{r['tasks']} | {fast} | "
                     f"{times(r['geomean_speedup_eager'])} | {times(r['geomean_speedup_compiled'])} | "
                     f"{num(r['mean_return'], '+.3f')} | "
                     f"{r['steps']} | {r['verifier_calls']} | {r['wall_s']:.1f} |")
    if all(r["fast_1.0_eager"] is None for r in table):
        lines += ["", "No timings (CPU interpreter): correctness and return only."]
    return "\n".join(lines) + "\n"
