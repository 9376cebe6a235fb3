"""`mtmc verify`: judge any file defining `ModelNew` against a task; print a table and JSON."""

from __future__ import annotations

import json
from pathlib import Path

from hydra.utils import instantiate
from omegaconf import DictConfig

from mtmc.program import Program
from mtmc.tasks import TaskError, load_task
from mtmc.verify import format_verdict_table
from mtmc.verify.verdict import Verdict


def run(cfg: DictConfig) -> Verdict:
    try:
        task = load_task(cfg.task)
    except TaskError as err:
        raise SystemExit(f"mtmc verify: {err}") from None
    candidate = Path(cfg.candidate)
    if not candidate.is_file():
        raise SystemExit(f"mtmc verify: {candidate}: no such candidate file")
    with instantiate(cfg.verifier) as verifier:
        verdict = verifier.verify(task, Program(candidate.read_text()))
    print(format_verdict_table(verdict))
    report = json.dumps(verdict.to_dict(), indent=2)
    print(report)
    if cfg.json_out:
        Path(cfg.json_out).write_text(report + "\n")
    return verdict
