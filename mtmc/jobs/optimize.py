"""`mtmc optimize`: build the roles from the config and run the plan -> code -> verify loop."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from hydra.core.hydra_config import HydraConfig
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from mtmc.budgets import Budgets
from mtmc.optimize import CHECKPOINTS, OptimizeResult, RunStopped, run_optimize
from mtmc.tasks import TaskError, load_task

log = logging.getLogger(__name__)


def run(cfg: DictConfig) -> OptimizeResult:
    budgets = Budgets.from_config(cfg)
    try:
        task = load_task(cfg.task)
    except TaskError as err:
        raise SystemExit(f"mtmc optimize: {err}") from None
    out_dir = Path(cfg.resume) if cfg.resume else Path(HydraConfig.get().runtime.output_dir)
    has_run = (out_dir / CHECKPOINTS).is_file()
    if cfg.resume and not has_run:
        raise SystemExit(f"mtmc optimize: resume={out_dir}: no run to resume there (no {CHECKPOINTS})")
    if not cfg.resume and has_run:
        # Before anything is written or started: the folder's config.yaml belongs to its own run.
        raise SystemExit(f"mtmc optimize: {out_dir} already holds a run: continue it with "
                         f"resume={out_dir}, or choose a fresh folder")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "config.yaml").write_text(OmegaConf.to_yaml(cfg, resolve=True))

    log.info("Instantiating planner <%s>", cfg.planner._target_)
    planner = instantiate(cfg.planner)
    log.info("Instantiating coder <%s>", cfg.coder._target_)
    coder = instantiate(cfg.coder)
    log.info("Instantiating verifier <%s>", cfg.verifier._target_)
    try:
        with instantiate(cfg.verifier) as verifier:
            return run_optimize(
                task, planner, coder, verifier, out_dir,
                budgets=budgets, reward=instantiate(cfg.reward), resume=bool(cfg.resume),
            )
    except RunStopped as stop:
        print(f"mtmc optimize: {stop.why}; stopped at step {stop.step}; continue with: "
              f"mtmc optimize resume={stop.out_dir}", file=sys.stderr)
        raise SystemExit(130 if stop.interrupted else 1) from None
