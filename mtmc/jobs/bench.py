"""`mtmc bench`: optimize every task of a suite and report; or `compare=` finished benchmarks."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig, OmegaConf

from mtmc.bench import compare_runs, load_calibrations, run_bench, select_tasks, visible_gpus, write_report
from mtmc.bench.metrics import broken_row
from mtmc.bench.results import RESULTS_MD
from mtmc.bench.run import FolderInUse
from mtmc.budgets import Budgets
from mtmc.optimize import RunStopped
from mtmc.tasks import BrokenTask, Task, TaskError, scan_suite

log = logging.getLogger(__name__)


def source_commit() -> str | None:
    """The commit of the code that ran, for the results manifest: MTMC_COMMIT where it is set (a
    tree copied without its .git, as onto a lent GPU machine), else the checkout's HEAD, else None."""
    if commit := os.environ.get("MTMC_COMMIT"):
        return commit
    try:
        done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True,
                              text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() or None if done.returncode == 0 else None


def run(cfg: DictConfig) -> dict[str, Any]:
    out_dir = Path(HydraConfig.get().runtime.output_dir)
    if cfg.compare:
        return _compare(cfg, out_dir)
    if not cfg.suite:
        raise SystemExit("mtmc bench: give suite=<builtin|builtin:eval|folder> "
                         "(or compare=<run1>,<run2>[,...])")
    try:
        tasks, broken = select_suite(cfg)
    except TaskError as err:
        raise SystemExit(f"mtmc bench: {err}") from None
    if not tasks and not broken:
        raise SystemExit(f"mtmc bench: no task of suite={cfg.suite} matches tasks={cfg.tasks} "
                         f"split={cfg.split}")
    roles = {role: OmegaConf.to_container(cfg[role], resolve=True)
             for role in ("planner", "coder", "verifier")}
    budgets = Budgets.from_config(cfg)
    for role, target in roles.items():
        log.info("%s <%s>", role, target["_target_"])
    try:
        calibrations = load_calibrations(cfg.calibration)
    except FileNotFoundError as err:
        raise SystemExit(f"mtmc bench: {err}") from None
    try:
        rows = run_bench(tasks, out_dir, roles=roles, budgets=budgets,
                         reward=OmegaConf.to_container(cfg.reward, resolve=True), gpus=visible_gpus(cfg.gpus),
                         calibrations=calibrations, retry_errors=cfg.retry_errors)
    except FolderInUse as err:
        raise SystemExit(f"mtmc bench: {err}") from None
    except RunStopped as stop:
        print(f"mtmc bench: {stop.why} during {stop.out_dir.name}; run again with out={out_dir} to "
              "resume (finished tasks are skipped, that one continues from its checkpoint)", file=sys.stderr)
        raise SystemExit(130 if stop.interrupted else 1) from None
    if broken:  # folder order is file-name order
        rows = sorted(rows + [broken_row(b.name, b.error) for b in broken], key=lambda row: row["task"])
    meta = {"suite": str(cfg.suite), **{role: target["_target_"] for role, target in roles.items()},
            "budgets": budgets.keywords(), "commit": source_commit()}
    aggregates = write_report(out_dir, rows, meta, ps=list(cfg.fast_p))
    print((out_dir / RESULTS_MD).read_text())
    return aggregates


def select_suite(cfg: DictConfig) -> tuple[list[Task], list[BrokenTask]]:
    """The tasks that `tasks=` and `split=` choose, and the suite's broken files to report as error rows:
    those `tasks=` names, or all of them when it names none (without `split=`: a broken file's split
    cannot be read, so a split leaves them out, with a warning)."""
    entries = scan_suite(cfg.suite)
    broken = [e for e in entries if isinstance(e, BrokenTask)]
    wanted = None if cfg.tasks is None else list(cfg.tasks)
    names = None if wanted is None else [n for n in wanted if n not in {b.name for b in broken}]
    tasks = select_tasks([e for e in entries if isinstance(e, Task)], names, cfg.split)
    if wanted is not None:
        broken = [b for b in broken if b.name in wanted]
    elif cfg.split is not None:
        for b in broken:
            log.warning("left out (split=%s cannot be read from a broken file): %s", cfg.split, b.error)
        broken = []
    for b in broken:
        log.warning("an error row: %s", b.error)
    return tasks, broken


def _compare(cfg: DictConfig, out_dir: Path) -> dict[str, Any]:
    runs = cfg.compare.split(",") if isinstance(cfg.compare, str) else list(cfg.compare)
    try:
        result = compare_runs(*runs, out_dir=out_dir, ps=list(cfg.fast_p))
    except (FileNotFoundError, ValueError) as err:  # a folder without results, or too few/many folders
        raise SystemExit(f"mtmc bench: {err}") from None
    print(result["markdown"])
    return result
