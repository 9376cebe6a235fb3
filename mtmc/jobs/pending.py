"""Jobs whose issues have not landed yet say so plainly instead of pretending to run."""

from omegaconf import DictConfig


def run(cfg: DictConfig) -> None:
    raise SystemExit(f"mtmc {cfg.job}: not implemented yet (tracked in the project's issues); "
                     "available now: mtmc tasks, mtmc verify, mtmc optimize, mtmc bench")
