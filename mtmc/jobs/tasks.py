"""`mtmc tasks`: list a suite with each task's split, family and traced summary."""

from __future__ import annotations

import json

from omegaconf import DictConfig
from rich.console import Console
from rich.table import Table

from mtmc.tasks import TaskError, load_suite, summarize


def run(cfg: DictConfig) -> list[dict]:
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
