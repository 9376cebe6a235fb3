"""`mtmc <job> key=value ...`: one console script, one Hydra app per job.

    mtmc tasks                                   list the built-in suite with summaries
    mtmc verify task=softmax_lastdim candidate=kernel.py
    mtmc optimize task=softmax_lastdim           plan -> code -> verify loop, run folder out
    mtmc bench suite=builtin:eval                optimize a suite: fast_p, speedups, roofline
    mtmc bench compare=<run1>,<run2>[,...]       benchmark folders side by side
    mtmc train data=[runs/bench/heuristic]       learn the LM planner from recorded runs
    mtmc tree record tree=<file> depth=2         every program near each port, judged once, into a file
    mtmc tree report tree=<file>                 oracle@k, heuristic, greedy, random on that tree, offline
    mtmc tree check tree=<file>                  the share of its programs today's coder still writes
    mtmc tree retime tree=<file> repeats=2       its top programs judged again: the noise of their times
    mtmc tree merge tree=<file> parts=[a,b]      the files of a sharded recording (record shard=I/N) as one

Each job's config is `conf/<job>.yaml`; anything after the job name is a Hydra override.
"""

from __future__ import annotations

import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

from mtmc.budgets import register_configs
from mtmc.config_check import check_overrides, check_values
from mtmc.resume import resume_overrides

# mtmc/conf links to the top-level conf/ in a checkout and is a copy of it in an installed wheel
CONF_DIR = str(Path(__file__).resolve().parent / "conf")
JOB_LINES = {
    "tasks": "list a suite's tasks: ops, shapes, FLOPs, bytes; check=port: what the template coder ports",
    "verify": "judge a file defining ModelNew against a task: the verdict as a table and JSON",
    "optimize": "the plan -> code -> verify loop on one task: a run folder with kernel.py and its report",
    "bench": "optimize every task of a suite: correctness, fast_p, speedups, roofline; compare= folders",
    "train": "learn the LM planner from recorded runs, then compare it with the baseline planners",
    "tree": "record: every program a few steps from each port, judged once, into a file; report: headroom; "
            "retime: the noise of each task's fastest programs; merge: shards' files as one",
}
JOBS = tuple(JOB_LINES)
USAGE = f"usage: mtmc {{{','.join(JOBS)}}} [key=value ...] [--help]"


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(help_text())
        raise SystemExit(0 if argv else 2)
    job, overrides = argv[0], argv[1:]
    if job not in JOBS:
        print(f"mtmc: unknown job {job!r}\n{USAGE}", file=sys.stderr)
        raise SystemExit(2)
    if job == "bench":
        overrides = [_compare_as_list(o) for o in overrides]
    if job == "tree":
        overrides = _action_as_override(overrides)
    _register_resolvers()
    if not any(o.startswith("-") for o in overrides):  # --cfg, --help, -m: Hydra's own modes
        if job == "optimize":
            overrides = resume_overrides(overrides, CONF_DIR)
        check_overrides(job, overrides, CONF_DIR)
    app = hydra.main(version_base="1.3", config_path=CONF_DIR, config_name=job)(_run_job)
    sys.argv = [f"mtmc {job}", *overrides]
    app()


def help_text() -> str:
    jobs = "\n".join(f"  {job:<9} {line}" for job, line in JOB_LINES.items())
    return (f"mtmc: PyTorch operators into fast, verified Triton kernels.\n\n{USAGE}\n\njobs:\n{jobs}\n\n"
            "`mtmc <job> --help` shows the job's config (every key can be overridden as key=value); "
            "README.md has examples.")


def _compare_as_list(override: str) -> str:
    # `compare=a,b` is what people type; to Hydra an unbracketed comma list is a sweep, so it errors.
    key, _, value = override.partition("=")
    if key == "compare" and "," in value and value[0] not in "[\"'":
        return f"compare=[{value}]"
    return override


def _action_as_override(overrides: list[str]) -> list[str]:
    # `mtmc tree record ...`: the word after the job is its action, a key like any other to Hydra.
    if overrides and "=" not in overrides[0] and not overrides[0].startswith("-"):
        return [f"action={overrides[0]}", *overrides[1:]]
    return overrides


def _register_resolvers() -> None:
    """What the job configs need before Hydra composes them: the resolvers below, and the budgets
    and reward nodes their defaults lists name (mtmc/budgets.py)."""
    register_configs()
    # `runs/${stem:${task}}/...`: a task given as a path names its run folder by the file's stem.
    if not OmegaConf.has_resolver("stem"):
        OmegaConf.register_new_resolver("stem", lambda ref: Path(str(ref)).stem)
    # `${first_set:${resume},runs/...}`: a resumed run writes into the folder it resumes.
    if not OmegaConf.has_resolver("first_set"):
        OmegaConf.register_new_resolver("first_set", lambda *refs: next(r for r in refs if r))


def _run_job(cfg: DictConfig) -> object:
    # Imports stay inside the jobs: `mtmc tasks` should not pay for importing LangGraph or TRL.
    job = cfg.job
    check_values(job, cfg)  # again per job of a -m sweep, which check_overrides leaves to Hydra
    if job == "tasks":
        from mtmc.jobs.tasks import run
    elif job == "verify":
        from mtmc.jobs.verify import run
    elif job == "optimize":
        from mtmc.jobs.optimize import run
    elif job == "bench":
        from mtmc.jobs.bench import run
    elif job == "tree":
        from mtmc.jobs.tree import run
    else:
        from mtmc.jobs.train import run
    result = run(cfg)
    if failure := failed_outcome(job, result):
        raise SystemExit(failure)  # exit 1: scripts and CI read the outcome from the exit code
    return result


def failed_outcome(job: str, result: object) -> str | None:
    """The sentence for a job that ran to its end with a failed outcome; None when it succeeded."""
    if job == "verify" and result.status != "ok":
        return f"mtmc verify: the verdict is {result.status}, not ok"
    if job == "optimize" and result.program is None:
        return f"mtmc optimize: no program was accepted; see {result.out_dir / 'report.md'}"
    return None


if __name__ == "__main__":
    main()
