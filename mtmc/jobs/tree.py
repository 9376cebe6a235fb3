"""`mtmc tree record`: record every program within `depth` steps of each task's port into a tree file."""

from __future__ import annotations

import logging

from hydra.utils import instantiate
from omegaconf import DictConfig

from mtmc.jobs.bench import select_suite
from mtmc.tasks import TaskError
from mtmc.tree import RecordSummary, record_tree

log = logging.getLogger(__name__)
ACTIONS = ("record",)


def run(cfg: DictConfig) -> RecordSummary:
    if cfg.action not in ACTIONS:
        raise SystemExit(f"mtmc tree: unknown action {cfg.action!r}; choose one of {', '.join(ACTIONS)}")
    return record(cfg)


def record(cfg: DictConfig) -> RecordSummary:
    try:
        tasks, broken = select_suite(cfg)
    except TaskError as err:
        raise SystemExit(f"mtmc tree: {err}") from None
    if not tasks:
        raise SystemExit(f"mtmc tree: no task of suite={cfg.suite} matches tasks={cfg.tasks} "
                         f"split={cfg.split}")
    log.info("Instantiating coder <%s>", cfg.coder._target_)
    coder = instantiate(cfg.coder)
    log.info("Instantiating verifier <%s>", cfg.verifier._target_)
    with instantiate(cfg.verifier) as verifier:
        summary = record_tree(tasks, coder, verifier, cfg.tree, depth=cfg.depth,
                              time_limit_s=cfg.time_limit_s)
    state = "complete" if summary.complete else f"cut after {summary.levels} whole level(s): run again"
    left_out = [b.name for b in broken] + list(summary.broken)
    print(f"mtmc tree record: {cfg.tree}: {len(tasks)} tasks to depth {cfg.depth}, {state}; "
          f"{summary.judged} programs judged now, {summary.in_file} already in the file, "
          f"{summary.refused} steps refused by the coder, {summary.wall_s:.1f} s"
          + (f"; left out (broken): {', '.join(left_out)}" if left_out else ""))
    return summary
