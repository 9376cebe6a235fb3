"""`mtmc tree record`: record every program within `depth` steps of each task's port into a tree file.
`mtmc tree report`: oracle@k and the planners on that tree, per split (mtmc/tree/report.py).
`mtmc tree check`: the share of the tree's programs today's coder still produces (mtmc/tree/check.py).
`mtmc tree retime`: each task's top programs judged again, and the noise of their times
(mtmc/tree/retime.py, mtmc/tree/noise.py).
`mtmc tree merge`: the tree files of a sharded recording (`record shard=I/N`) as one (mtmc/tree/merge.py)."""

from __future__ import annotations

import dataclasses
import inspect
import json
import logging
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.utils import get_object, instantiate
from omegaconf import DictConfig, OmegaConf

from mtmc.jobs.bench import select_suite
from mtmc.protocols import Planner
from mtmc.report import write_atomic
from mtmc.tasks import Task, TaskError
from mtmc.tree import RecordSummary, load_tree, record_tree, task_fingerprint
from mtmc.tree.check import check_tree
from mtmc.tree.merge import MergeSummary, merge_trees
from mtmc.tree.noise import noise_markdown, noise_report
from mtmc.tree.report import headroom, plot_anytime, report_markdown
from mtmc.tree.retime import FreshnessError, RetimeSummary, retime_tree
from mtmc.tree.shard import shard_tasks

log = logging.getLogger(__name__)
ACTIONS = ("record", "report", "check", "retime", "merge")
REPORT_MD, REPORT_JSON, ANYTIME_PLOT = "tree_report.md", "tree_report.json", "anytime.png"
RETIME_MD, RETIME_JSON = "retime_report.md", "retime_report.json"


def run(cfg: DictConfig) -> RecordSummary | MergeSummary | dict[str, Any]:
    if cfg.action not in ACTIONS:
        raise SystemExit(f"mtmc tree: unknown action {cfg.action!r}; choose one of {', '.join(ACTIONS)}")
    actions = {"record": record, "report": report, "check": check, "retime": retime, "merge": merge}
    return actions[cfg.action](cfg)


def suite_tasks(cfg: DictConfig) -> tuple[list[Task], list[str]]:
    try:
        tasks, broken = select_suite(cfg)
    except TaskError as err:
        raise SystemExit(f"mtmc tree: {err}") from None
    if not tasks:
        raise SystemExit(f"mtmc tree: no task of suite={cfg.suite} matches tasks={cfg.tasks} "
                         f"split={cfg.split}")
    return tasks, [b.name for b in broken]


def record(cfg: DictConfig) -> RecordSummary:
    tasks, broken = suite_tasks(cfg)
    log.info("Instantiating coder <%s>", cfg.coder._target_)
    coder = instantiate(cfg.coder)
    trusted_only(cfg.judge, coder)
    if cfg.shard is not None:
        tasks, broken = own_shard(cfg, tasks, broken, coder)
    log.info("Instantiating verifier <%s>", cfg.verifier._target_)
    with instantiate(cfg.verifier) as verifier:
        summary = record_tree(tasks, coder, verifier, cfg.tree, depth=cfg.depth,
                              time_limit_s=cfg.time_limit_s, batch=cfg.batch, judge=cfg.judge,
                              chunk=cfg.chunk, max_retries=cfg.max_retries)
    state = "complete" if summary.complete else f"cut after {summary.levels} whole level(s): run again"
    left_out = broken + list(summary.broken)
    print(f"mtmc tree record: {cfg.tree}: {len(tasks)} tasks to depth {cfg.depth}, {state}; "
          f"{summary.judged} programs judged now, {summary.in_file} already in the file, "
          f"{summary.refused} steps refused by the coder, {summary.retried} retries that wrote another "
          f"program from the failed verdict, {summary.wall_s:.1f} s"
          + (f"; {summary.retry} verdicts failed for the machine (infrastructure), not written: run again "
             "to judge them" if summary.retry else "")
          + (f"; left out (broken): {', '.join(left_out)}" if left_out else ""))
    return summary


def own_shard(cfg: DictConfig, tasks: list[Task], broken: list[str],
              coder: Any) -> tuple[list[Task], list[str]]:
    """This recorder's share of the tasks (mtmc/tree/shard.py); the suite's broken files are reported by
    shard 0 alone, so the shards' lines name each once."""
    try:
        mine, line = shard_tasks(tasks, coder, cfg.depth, str(cfg.shard))
    except ValueError as err:
        raise SystemExit(f"mtmc tree record: {err}") from None
    print(f"mtmc tree record: {line}", flush=True)
    return mine, broken if line.startswith("shard 0/") else []


def merge(cfg: DictConfig) -> MergeSummary:
    if not cfg.parts:
        raise SystemExit("mtmc tree merge: give the shards' files as parts=[a.jsonl,b.jsonl] and the merged "
                         "file as tree=<file>")
    try:
        summary = merge_trees(list(cfg.parts), cfg.tree)
    except (FileNotFoundError, FileExistsError, ValueError) as err:  # a MergeConflict is a ValueError
        raise SystemExit(f"mtmc tree merge: {err}") from None
    print(f"mtmc tree merge: {cfg.tree}: {summary.rows} rows ({summary.nodes} programs of "
          f"{len(summary.tasks)} tasks) from {summary.parts} files; {summary.repeated} rows held already "
          "in an earlier file, left out")
    return summary


def trusted_only(judge: str, coder: Any) -> None:
    """Trusted batches run programs without the sandbox or the anti-cheat instruments
    (mtmc/verify/trusted_batch.py): only for the embedded template coder, whose code is this
    project's. Any other coder (an LLM's programs) is judged one program at a time, in full."""
    from coders.template import TemplateCoder

    if judge == "batch" and type(coder) is not TemplateCoder:
        raise SystemExit(f"mtmc tree record: judge=batch judges programs without the sandbox, so it is for "
                         f"the template coder only, not {type(coder).__module__}.{type(coder).__name__}; "
                         "use judge=each")


def recorded_tasks(cfg: DictConfig, required: bool = False) -> tuple[Any, list, list, list[str]]:
    """The tree file, the suite's tasks, those the tree holds as they are now, and the names of
    those it holds in an older form (changed since the recording). `required`: none held is an error."""
    try:
        tree = load_tree(cfg.tree)
    except (FileNotFoundError, ValueError) as err:
        raise SystemExit(f"mtmc tree: {err}") from None
    tasks, _ = suite_tasks(cfg)
    recorded = [t for t in tasks if tree.task_sha.get(t.name) == task_fingerprint(t)]
    changed = [t.name for t in tasks if t.name in tree.task_sha and t not in recorded]
    if required and not recorded:
        raise SystemExit(f"mtmc tree: {cfg.tree} holds none of the {len(tasks)} selected tasks"
                         + (f" as they are now (changed since: {', '.join(changed)})" if changed else ""))
    return tree, tasks, recorded, changed


def report(cfg: DictConfig) -> dict[str, Any]:
    tree, tasks, recorded, changed = recorded_tasks(cfg, required=True)
    result = headroom(tree, recorded, build_planners(cfg.planners, cfg.seeds), max_steps=cfg.max_steps,
                      max_retries=cfg.max_retries)
    result["meta"] |= {"suite": str(cfg.suite), "changed_tasks": changed,
                       "not_in_tree": [t.name for t in tasks if t.name not in tree.task_sha]}
    out = out_folder(cfg)
    markdown = report_markdown(result)
    if changed:
        markdown += f"\nLeft out (the task changed since the recording): {', '.join(changed)}\n"
    write_atomic(out / REPORT_MD, markdown)
    write_atomic(out / REPORT_JSON, json.dumps(result, indent=2) + "\n")
    plot_anytime(out / ANYTIME_PLOT, result)
    print(markdown)
    return result


def check(cfg: DictConfig) -> dict[str, Any]:
    tree, _, recorded, _ = recorded_tasks(cfg)
    result = check_tree(tree, recorded, instantiate(cfg.coder), max_retries=cfg.max_retries)
    for row in result["tasks"]:
        print(f"{row['task']:<40} {row['produced']:>6} of {row['recorded']:>6} programs still produced")
    share = "n/a" if result["share"] is None else f"{100 * result['share']:.1f}%"
    print(f"mtmc tree check: {cfg.tree}: {result['produced']} of {result['recorded']} programs of "
          f"{len(recorded)} tasks ({share}) are what today's coder writes")
    return result


def retime(cfg: DictConfig) -> dict[str, Any]:
    # A verdict cache would answer each repeat with the first verdict: refused before any worker starts
    # (retime_tree refuses a verifier holding one too, for callers other than this job).
    if OmegaConf.select(cfg, "verifier.cache_path", default=None):
        raise SystemExit("mtmc tree retime: needs fresh measurements, not cached verdicts: "
                         "give verifier.cache_path=null")
    tree, tasks, recorded, changed = recorded_tasks(cfg, required=True)
    held = [task for task in tasks if task.name in tree.task_sha]  # changed ones are skipped with a log line
    coder = instantiate(cfg.coder)
    trusted_only(cfg.judge, coder)
    with instantiate(cfg.verifier) as verifier:
        try:
            summary = retime_tree(held, coder, verifier, cfg.tree, top=cfg.top, repeats=cfg.repeats,
                                  batch=cfg.batch, judge=cfg.judge, chunk=cfg.chunk,
                                  time_limit_s=cfg.time_limit_s)
        except FreshnessError as err:
            raise SystemExit(f"mtmc tree retime: {err}") from None
    result = noise_report(load_tree(cfg.tree), recorded, cfg.top)
    result["meta"] |= {"suite": str(cfg.suite), "repeats": cfg.repeats, "changed_tasks": changed,
                       "run": dataclasses.asdict(summary)}
    markdown = noise_markdown(result)
    out = out_folder(cfg)
    write_atomic(out / RETIME_MD, markdown)
    write_atomic(out / RETIME_JSON, json.dumps(result, indent=2) + "\n")
    print(markdown)
    print(retime_line(cfg.tree, summary, changed))
    return result


def retime_line(tree: str, summary: RetimeSummary, changed: list[str]) -> str:
    return (f"mtmc tree retime: {tree}: {summary.judged} verdicts judged now, {summary.in_file} already "
            f"in the file, {summary.programs} programs of {summary.tasks} tasks, {summary.stale} no longer "
            f"written by the coder (skipped), {summary.wall_s:.1f} s"
            + (f"; {summary.retry} verdicts failed for the machine (infrastructure), not written: run "
               "again to judge them" if summary.retry else "")
            + (f"; left out (broken): {', '.join(summary.broken)}" if summary.broken else "")
            + (f"; skipped (changed since the recording): {', '.join(changed)}" if changed else ""))


def out_folder(cfg: DictConfig) -> Path:
    """Where a report goes: `out`, else the run folder."""
    out = Path(cfg.out or HydraConfig.get().runtime.output_dir)
    out.mkdir(parents=True, exist_ok=True)
    return out


def build_planners(configs: DictConfig, seeds: int) -> dict[str, list[Planner]]:
    """Each configured planner; one whose constructor takes a `seed` once per seed 0 .. seeds - 1."""
    planners = {}
    for name, node in configs.items():
        kwargs = OmegaConf.to_container(node, resolve=True)
        takes_seed = "seed" in inspect.signature(get_object(kwargs["_target_"])).parameters
        planners[str(name)] = [instantiate({**kwargs, "seed": s}) for s in range(seeds)] if takes_seed \
            else [instantiate(kwargs)]
    return planners
