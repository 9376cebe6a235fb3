"""`run_optimize`: one task through the plan -> code -> verify loop, checkpointed, into a run folder.

    result = run_optimize(task, planner, coder, verifier, "runs/softmax/1",
                          budgets=Budgets(max_steps=12, max_retries=1, time_limit_s=3600))
    result = run_optimize(..., resume=True)   # after a crash: continue from the last finished node

The graph's state is checkpointed to `<out_dir>/checkpoints.sqlite` after every node (one thread per
run folder). Progress is printed one line per coder attempt and appended to `trajectory.jsonl` as the
run goes; at the end every output is rewritten from the final state (see mtmc/report.py), so a
resumed run's files equal an uninterrupted run's: the same steps, none lost, none repeated.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langgraph.checkpoint.sqlite import SqliteSaver
from rich.console import Console
from rich.status import Status

from mtmc.budgets import Budgets
from mtmc.graph import Context, build_graph, initial_state, run_config
from mtmc.graph.context import Event
from mtmc.program import Program
from mtmc.protocols import Coder, Planner, RoleUnavailable, Verifier
from mtmc.report import TRAJECTORY, write_outputs
from mtmc.reward import RewardConfig
from mtmc.tasks import Task
from mtmc.verify.verdict import Verdict

CHECKPOINTS = "checkpoints.sqlite"
THREAD_ID = "optimize"  # one run per folder, so the thread id is a constant
DEFAULT_REWARD = RewardConfig()  # frozen, so one shared default is safe
DEFAULT_BUDGETS = Budgets()  # frozen too


class RunStopped(Exception):
    """The run stopped before its end (Ctrl-C, a coder's server gone); its folder resumes it."""

    def __init__(self, out_dir: Path, step: int, why: str) -> None:
        super().__init__(f"{why}: stopped at step {step}")
        self.out_dir, self.step, self.why = out_dir, step, why
        self.interrupted = why == "interrupted"


@dataclass
class OptimizeResult:
    out_dir: Path
    program: Program | None  # the best verified program; None if no port was ever accepted
    verdict: Verdict | None
    stop_reason: str | None
    history: list[dict[str, Any]] = field(default_factory=list)  # one StepRecord dict per step
    trajectory: list[dict[str, Any]] = field(default_factory=list)  # one record per coder attempt
    result: dict[str, Any] = field(default_factory=dict)  # what result.json holds

    @property
    def total_reward(self) -> float:
        return sum(r["reward"] for r in self.history)


def run_optimize(task: Task, planner: Planner, coder: Coder, verifier: Verifier, out_dir: str | Path, *,
                 budgets: Budgets = DEFAULT_BUDGETS, reward: RewardConfig = DEFAULT_REWARD,
                 resume: bool = False, console: Console | None = None) -> OptimizeResult:
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if resume and not (out_dir / CHECKPOINTS).is_file():
        raise FileNotFoundError(f"{out_dir}: no {CHECKPOINTS}, so there is no run to resume")
    console = console or Console(stderr=True)
    config = run_config(THREAD_ID, budgets)

    with LatestCheckpointSaver.from_conn_string(str(out_dir / CHECKPOINTS)) as saver:
        graph = build_graph().compile(checkpointer=saver)
        snapshot = graph.get_state(config)
        if resume and not snapshot.values:
            raise ValueError(f"{out_dir}: {CHECKPOINTS} holds no run to resume")
        if not resume and snapshot.values:
            raise ValueError(f"{out_dir} already holds a run; pass resume=True or use a fresh folder")
        progress = _Progress(out_dir / TRAJECTORY, console, snapshot.values.get("trajectory", []))
        context = Context(task=task, planner=planner, coder=coder, verifier=verifier, reward=reward,
                          budgets=budgets, on_event=progress)
        # Not snapshot.next: it leaves out a node whose writes were saved before the kill came (the
        # node ended, the checkpoint after it was not written yet), so a run killed right then would
        # look finished. snapshot.tasks keeps that node, and invoke(None) applies its saved writes.
        pending = [t.name for t in snapshot.tasks]
        if resume and pending:
            console.print(f"[bold]resuming[/] {task.name} at {', '.join(pending)} "
                          f"(step {snapshot.values.get('step', 0)})")
        if not resume or pending:
            # durability="sync": each node's checkpoint is on disk before the next node starts, so a
            # kill -9 loses at most the node that was running.
            try:
                with console.status(f"{task.name}: starting") as progress.status:
                    graph.invoke(None if resume else initial_state(), config, context=context,
                                 durability="sync")
            except (KeyboardInterrupt, RoleUnavailable) as err:
                why = "interrupted" if isinstance(err, KeyboardInterrupt) else str(err)
                raise RunStopped(out_dir, graph.get_state(config).values.get("step", 0), why) from err
        state = graph.get_state(config).values

    result = write_outputs(out_dir, state, budgets.keywords())
    progress.done(result)
    return OptimizeResult(
        out_dir=out_dir,
        program=Program.from_dict(state["program"]) if state.get("program") else None,
        verdict=Verdict.from_dict(state["verdict"]) if state.get("verdict") else None,
        stop_reason=state.get("stop_reason"),
        history=list(state.get("history", [])),
        trajectory=list(state.get("trajectory", [])),
        result=result,
    )


_DROP_OLDER_CHECKPOINTS = """DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_id NOT IN
    (SELECT MAX(checkpoint_id) FROM checkpoints WHERE thread_id = ? GROUP BY checkpoint_ns)"""
_DROP_ORPHAN_WRITES = """DELETE FROM writes WHERE thread_id = ? AND checkpoint_id NOT IN
    (SELECT checkpoint_id FROM checkpoints WHERE thread_id = ?)"""


class LatestCheckpointSaver(SqliteSaver):
    """A SqliteSaver that keeps only the newest checkpoint of a thread and the writes pending on it.

    Resume reads just those. Every checkpoint holds the whole state, and `history` and `trajectory`
    grow by a record an attempt, so keeping them all made the file grow with the square of the steps
    (40 scripted steps: 3.4 MB, 165 checkpoints). The prune is its own transaction after the
    insert: a kill between the two leaves one extra checkpoint, which the next put removes.
    """

    def put(self, config, checkpoint, metadata, new_versions):
        saved = super().put(config, checkpoint, metadata, new_versions)
        self.prune([saved["configurable"]["thread_id"]])
        return saved

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """BaseCheckpointSaver.prune, which SqliteSaver leaves unimplemented. Checkpoint ids are
        time-ordered (uuid6), so the newest of a namespace is its largest id, as SqliteSaver's own
        `get_tuple` assumes."""
        if strategy == "delete":
            for thread_id in thread_ids:
                self.delete_thread(thread_id)
            return
        if strategy != "keep_latest":
            raise ValueError(f"unknown prune strategy {strategy!r}: keep_latest or delete")
        with self.cursor() as cur:
            for thread_id in map(str, thread_ids):
                cur.execute(_DROP_OLDER_CHECKPOINTS, (thread_id, thread_id))
                cur.execute(_DROP_ORPHAN_WRITES, (thread_id, thread_id))


class _Progress:
    """The on_event callback: a rich line per attempt, and trajectory.jsonl appended as the run goes.

    The file starts as the checkpointed attempts (empty for a fresh run), so whatever a killed
    process appended after its last checkpoint, a torn last line included, is dropped; the node that
    was interrupted runs again and reports its attempt once. At the end the file is rewritten from
    the final state anyway.
    """

    def __init__(self, trajectory: Path, console: Console, committed: list[dict[str, Any]]) -> None:
        self.path = trajectory
        self.console = console
        trajectory.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in committed))
        self.seen = {(r["step"], r["attempt"]) for r in committed}
        self.status: Status | None = None  # the transient "step N: <strategy>" spinner, when live

    def __call__(self, event: Event) -> None:
        kind = event["event"]
        if kind == "plan" and self.status is not None:
            self.status.update(f"step {event['step']}: {event['strategy']}")
        elif kind == "attempt":
            self._attempt({k: v for k, v in event.items() if k != "event"})
        elif kind == "finish":
            self.console.print(f"[bold]stopped[/]: {event['stop_reason']} after {event['steps']} steps")

    def _attempt(self, record: dict[str, Any]) -> None:
        key = (record["step"], record["attempt"])
        if key not in self.seen:
            self.seen.add(key)
            with self.path.open("a") as f:
                f.write(json.dumps(record, sort_keys=True) + "\n")
        color = {"accepted": "green", "retry": "yellow", "rejected": "red"}[record["outcome"]]
        speedup = "-" if record["speedup_eager"] is None else f"{record['speedup_eager']:.2f}x"
        self.console.print(f"{record['step']:>3}.{record['attempt']} {record['strategy'][:30]:<30} "
                           f"[{color}]{record['status']:<13} {record['outcome']:<8}[/] {speedup:>7} "
                           f"{record['reward']:+.3f}", highlight=False)

    def done(self, result: dict[str, Any]) -> None:
        speedup = result["speedup_eager"]
        timing = "no timings" if speedup is None else f"{speedup:.2f}x vs eager"
        accepted = result["kernel"] is not None
        summary = f"kernel.py: {result['status']}, {timing}" if accepted else "no program accepted"
        self.console.print(f"[bold]{result['task']}[/]: {summary}, return {result['return']:+.3f} "
                           f"-> {self.path.parent}")

