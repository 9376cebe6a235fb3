"""Recorded optimize runs -> the planner's training examples.

    runs = load_runs(["runs/bench/heuristic"], suite="builtin")  # every trajectory.jsonl below the folders
    examples = sft_examples(runs)   # [{"prompt", "completion"}]: the choices worth imitating
    states = plan_states(runs)      # [{"prompt", "task", "step", "accepted", "previous"}]: GRPO prompts

A run folder is what `mtmc optimize` writes, or one task's folder of `mtmc bench` (`<out>/<task>/`):
`trajectory.jsonl` (one record per coder attempt) and `result.json` (written when the run ends; a
folder without it is an unfinished run and is skipped with a warning). The planner's view of step i
is rebuilt from the records exactly as the graph builds it (mtmc/graph/nodes.py `gate`): one
StepRecord per finished step, from the step's last attempt, and `steps_left = max_steps - i`.

What SFT keeps, and why: the steps whose last attempt the gate *accepted*. An accepted step is
correct and not slower than the program it started from, so its step reward is positive (`correct`
plus a non-negative log speedup); a rejected or failed step is a choice not worth copying. The
demonstrator's own `stop`, when it ended the run itself, is kept too: without it the planner could
never learn to stop. GRPO takes every recorded state, rejected steps included (they are states
worth exploring from), and judges its own choices there.

Train and eval never overlap: a run of an eval-split task (Task.split == "eval") is refused with an
error naming the folder, never silently dropped, so a mixed-up data folder is noticed.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtmc.lm_policy import completion_text, render_prompt
from mtmc.protocols import StepRecord
from mtmc.report import RESULT, TRAJECTORY
from mtmc.tasks import Task, TaskSummary, load_suite, summarize
from mtmc.verify.verdict import Verdict

log = logging.getLogger(__name__)

EVAL_SPLIT = "eval"


class DataError(ValueError):
    """Training data that cannot be used; the message names the folder and the problem."""


@dataclass
class RecordedRun:
    folder: Path
    task: Task
    summary: TaskSummary
    steps: list[dict[str, Any]]  # the last attempt of each finished step, in step order
    max_steps: int
    stop_reason: str | None

    def history(self, step: int) -> list[StepRecord]:
        """The planner's history before `step`, as the graph's gate recorded it."""
        return [StepRecord(index=r["step"], strategy=r["strategy"], status=r["status"],
                           accepted=r["outcome"] == "accepted", speedup=r["speedup_eager"],
                           reward=r["reward"],
                           reason=r["verdict"].get("reason", ""))  # a verdict from before reasons: none
                for r in self.steps[:step]]

    def prompt(self, step: int) -> str:
        return render_prompt(self.summary, self.history(step), self.max_steps - step, self.floor_share(step))

    def accepted_before(self, step: int) -> list[dict[str, Any]]:
        """The steps the gate accepted before `step`: the last one made the program current then."""
        return [r for r in self.steps[:step] if r["outcome"] == "accepted"]

    def floor_share(self, step: int) -> float | None:
        """The roofline share of the program current before `step` (the last accepted one's verdict)."""
        accepted = self.accepted_before(step)
        return Verdict.from_dict(accepted[-1]["verdict"]).roofline_fraction if accepted else None


# ---------------------------------------------------------------------------------------------------
# reading run folders


def load_runs(folders: Sequence[str | Path], suite: str = "builtin") -> list[RecordedRun]:
    """Every finished run below `folders`; tasks are looked up by name in `suite`."""
    if not folders:
        raise DataError("no data folders given: pass data=[<optimize run or bench folder>, ...]")
    tasks = {task.name: task for task in load_suite(suite)}
    summaries: dict[str, TaskSummary] = {}
    runs = []
    for folder in run_folders(folders):
        if not (folder / RESULT).is_file():
            log.warning("%s: no %s (an unfinished run): skipped", folder, RESULT)
            continue
        run = load_run(folder, tasks, summaries)
        if run.steps:
            runs.append(run)
    if not runs:
        raise DataError(f"no finished run with at least one step below {[str(f) for f in folders]}")
    return runs


def run_folders(folders: Sequence[str | Path]) -> list[Path]:
    found: list[Path] = []
    for folder in map(Path, folders):
        if not folder.is_dir():
            raise DataError(f"{folder}: no such data folder")
        found += sorted(p.parent for p in folder.rglob(TRAJECTORY))
    return found


def load_run(folder: Path, tasks: dict[str, Task], summaries: dict[str, TaskSummary]) -> RecordedRun:
    result = json.loads((folder / RESULT).read_text())
    name = result["task"]
    if name not in tasks:
        raise DataError(f"{folder}: task {name!r} is not in the suite; "
                        "pass suite=<the folder of its task files>")
    task = tasks[name]
    if task.split == EVAL_SPLIT:
        raise DataError(f"{folder}: task {name!r} belongs to the eval split; training on it would leak into "
                        "the evaluation (train and eval tasks never overlap)")
    if name not in summaries:
        summaries[name] = summarize(task)  # what the graph's baseline node computes
    records = [json.loads(line) for line in (folder / TRAJECTORY).read_text().splitlines() if line.strip()]
    return RecordedRun(folder=folder, task=task, summary=summaries[name], steps=finished_steps(records),
                       max_steps=result["budgets"]["max_steps"], stop_reason=result["stop_reason"])


def finished_steps(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The last attempt of each step (the one the gate did not send back to the coder)."""
    return [r for r in records if r["outcome"] != "retry"]


# ---------------------------------------------------------------------------------------------------
# examples


def sft_examples(runs: Sequence[RecordedRun]) -> list[dict[str, str]]:
    examples = []
    for run in runs:
        for i, record in enumerate(run.steps):
            if record["outcome"] == "accepted":
                examples.append({"prompt": run.prompt(i), "completion": completion_text(record["strategy"])})
        if run.stop_reason == "planner_stop":
            examples.append({"prompt": run.prompt(len(run.steps)), "completion": completion_text("stop")})
    if not examples:
        raise DataError(f"no accepted step in {len(runs)} run(s): nothing to imitate")
    return examples


def plan_states(runs: Sequence[RecordedRun]) -> list[dict[str, Any]]:
    """One GRPO prompt per recorded state, with what the reward needs to rebuild it: the task, the
    step index, the strategies accepted before it (replayed by the coder) and the verdict of the
    program they made (JSON, "" before the port), which the step's speedup is measured against."""
    states = []
    for run in runs:
        last = len(run.steps) + (run.stop_reason == "planner_stop")  # the state it chose to stop in
        for i in range(last):
            accepted = run.accepted_before(i)
            states.append({
                "prompt": run.prompt(i),
                "task": run.task.name,
                "step": i,
                "accepted": [r["strategy"] for r in accepted],
                "previous": json.dumps(accepted[-1]["verdict"]) if accepted else "",
            })
    return states
