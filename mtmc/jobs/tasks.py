"""`mtmc tasks`: list a suite with each task's split, family and traced summary;
`check=port`: which of its tasks the template coder can port, and why not (see port_coverage.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from omegaconf import DictConfig
from rich.console import Console
from rich.table import Table

from mtmc.jobs.port_coverage import coverage_report, port_row
from mtmc.tasks import BrokenTask, Task, TaskError, load_suite, scan_suite, summarize

CHECKS = ("port",)


def run(cfg: DictConfig) -> list[dict] | dict[str, Any]:
    if cfg.check is not None:
        return check(cfg)
    try:
        tasks = load_suite(cfg.suite)
    except TaskError as err:
        raise SystemExit(f"mtmc tasks: {err}") from None
    rows = [_row(task) for task in tasks]
    if cfg.json:
        print(json.dumps(rows, indent=2))
    else:
        _print_table(rows, title=f"{len(rows)} tasks in {cfg.suite}")
    return rows


def _row(task) -> dict:
    summary = summarize(task)
    return {
        "name": task.name,
        "split": task.split or "-",
        "family": task.meta.get("family", "-"),
        "inputs": [f"{'x'.join(map(str, t.shape))} {t.dtype}" for t in summary.inputs],
        "ops": summary.op_names,
        "flops": summary.flops,
        "bytes": summary.bytes_min,
        "intensity": round(summary.intensity, 2),
    }


def _print_table(rows: list[dict], title: str) -> None:
    table = Table(title=title)
    for column in ("name", "split", "family", "inputs", "ops", "GFLOP", "MB", "FLOP/B"):
        table.add_column(column, justify="right" if column in ("GFLOP", "MB", "FLOP/B") else "left")
    for r in rows:
        table.add_row(r["name"], r["split"], r["family"], "\n".join(r["inputs"]), ", ".join(r["ops"]),
                      f"{r['flops'] / 1e9:.2f}", f"{r['bytes'] / 1e6:.1f}", f"{r['intensity']:.1f}")
    Console(width=200).print(table)


def check(cfg: DictConfig) -> dict[str, Any]:
    if cfg.check not in CHECKS:
        raise SystemExit(f"mtmc tasks: check={cfg.check}: use one of {', '.join(CHECKS)}")
    try:
        entries = scan_suite(cfg.suite, on_load=_say_loaded)
    except TaskError as err:
        raise SystemExit(f"mtmc tasks: {err}") from None
    rows = []
    for i, entry in enumerate(entries, 1):
        rows.append(port_row(entry))
        if len(entries) > 1:  # tracing a large task takes seconds: say where the check is
            row = rows[-1]
            print(f"[{i}/{len(entries)}] {row['task']}: port {row['port']} ({row['seconds']:.1f} s)",
                  file=sys.stderr, flush=True)
    report = coverage_report(rows, str(cfg.suite))
    text = json.dumps(report, indent=2)
    if cfg.out:
        Path(cfg.out).write_text(text + "\n")
    if cfg.json:
        print(text)
    else:
        _print_port_table(report)
    return report


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def _say_loaded(i: int, n: int, entry: Task | BrokenTask) -> None:
    status = "broken" if isinstance(entry, BrokenTask) else "loaded"
    print(f"[{i}/{n}] {entry.name}: {status}", file=sys.stderr, flush=True)


def _print_port_table(report: dict[str, Any]) -> None:
    table = Table(title=f"port coverage of {report['suite']}")
    for column in ("task", "port", "kernels", "library", "reason"):
        table.add_column(column, justify="right" if column == "kernels" else "left")
    for r in report["tasks"]:
        library = "-" if r["library"] is None else ("yes" if r["library"] else "no")
        table.add_row(r["task"], r["port"], "-" if r["kernels"] is None else str(r["kernels"]), library,
                      _clip(r["reason"], 140))
    reasons = Table(title="why not")
    reasons.add_column("tasks", justify="right")
    reasons.add_column("reason")
    for r in report["reasons"]:
        reasons.add_row(str(r["count"]), r["reason"])
    console = Console(width=200)
    console.print(table)
    if report["reasons"]:
        console.print(reasons)
    console.print(report["summary"], highlight=False)
