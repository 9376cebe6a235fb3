"""Check a job's config before Hydra starts it: each mistake is one sentence, never a traceback.

    check_overrides("optimize", ["task=softmax_lastdim", "max_steps=-3"])
    -> SystemExit("mtmc optimize: max_steps=-3: must be a whole number, at least 1")

Hydra would report these later and at length: an unknown config-group option (`planner=foo`) as a
composition error with the search path, a key left `???` (`coder=openai` without `coder.model`) as an
OmegaConf traceback, a negative budget as a LangGraph error in the middle of a run (after the run
folder was made). Composing once here costs a fraction of a second.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from hydra import compose, initialize_config_dir
from hydra.errors import HydraException
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from mtmc.budgets import RULES, budget_problem, register_configs

GROUPS = ("planner", "coder", "verifier", "experiment")
_ABSENT = object()
FILLED_BY_JOB = {"train": {"planner.checkpoint"}}  # `???` keys the job sets itself (the one it trains)


def check_overrides(job: str, overrides: Sequence[str], conf_dir: str) -> None:
    """Compose the job's config as Hydra will and check it; raise SystemExit with one line if wrong."""
    for override in overrides:
        check_group_choice(job, override, Path(conf_dir))
    register_configs()  # the budgets and reward nodes the job configs' defaults lists name
    try:
        with initialize_config_dir(config_dir=conf_dir, version_base="1.3", job_name=job):
            cfg = compose(config_name=job, overrides=list(overrides))
    except (HydraException, OmegaConfBaseException) as err:
        raise SystemExit(f"mtmc {job}: {first_line(err)}") from None
    check_values(job, cfg)


def check_values(job: str, cfg: DictConfig) -> None:
    """Keys left unset (`???`), a replay verifier without its tree, and budgets out of range."""
    missing = sorted(set(_missing_keys(cfg)) - FILLED_BY_JOB.get(job, set()))
    if missing:
        given = " ".join(f"{key}=<...>" for key in missing)
        raise SystemExit(f"mtmc {job}: {', '.join(missing)} not set: give {given}")
    if str(OmegaConf.select(cfg, "verifier._target_", default="")).endswith("ReplayVerifier") \
            and not OmegaConf.select(cfg, "verifier.tree", default=None):
        raise SystemExit(f"mtmc {job}: verifier=replay needs tree=<file> "
                         "(a tree that mtmc tree record wrote)")
    for prefix in ("", "eval."):  # a run's budgets, and the train job's eval's (mtmc/budgets.py)
        for key in RULES:
            value = OmegaConf.select(cfg, prefix + key, default=_ABSENT)
            problem = "" if value is _ABSENT else budget_problem(key, value, prefix)
            if problem:
                raise SystemExit(f"mtmc {job}: {problem}")


def _missing_keys(cfg: DictConfig, prefix: str = "") -> list[str]:
    # Not OmegaConf.missing_keys: it resolves interpolations, and `${hydra:...}` cannot resolve yet.
    keys = []
    for key in cfg:
        if OmegaConf.is_missing(cfg, key):
            keys.append(f"{prefix}{key}")
        elif not OmegaConf.is_interpolation(cfg, key) and isinstance(cfg[key], DictConfig):
            keys += _missing_keys(cfg[key], f"{prefix}{key}.")
    return keys


def check_group_choice(job: str, override: str, conf_dir: Path) -> None:
    # Hydra's own message for this spans a dozen lines and lists its search path.
    key, _, value = override.partition("=")
    if key not in GROUPS or not value:
        return
    options = sorted(p.stem for p in (conf_dir / key).glob("*.yaml"))
    for choice in value.split(","):  # `planner=a,b` is a sweep under -m
        if choice not in options:
            raise SystemExit(f"mtmc {job}: {key}={choice}: no such {key}; choose one of {', '.join(options)}")


def first_line(err: BaseException) -> str:
    # "Could not override 'max_stepz'." says little alone; its cause says "Key 'max_stepz' is not in struct".
    text = (str(err).strip().splitlines() or [type(err).__name__])[0]
    if err.__cause__ is not None and str(err.__cause__).strip():
        text = f"{text.rstrip('.')}: {str(err.__cause__).strip().splitlines()[0]}"
    return re.sub(r"Key '([^']*)' is not in struct", r"the config has no key '\1'", text)
