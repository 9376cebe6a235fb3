"""Run `optimize` on every task of a suite, one run folder per task, resumable task by task.

    rows = run_bench(tasks, "runs/bench/x", roles={"planner": {...}, "coder": {...}, "verifier": {...}},
                     budgets=Budgets(max_steps=12), reward={"_target_": "mtmc.reward.RewardConfig"},
                     gpus=["0", "1"], calibrations=load_calibrations("auto"))

Layout: `<out>/<task>/` is that task's optimize run folder (kernel.py, trajectory.jsonl, ...) plus
`bench.json`, its metrics row, written atomically once the task is done. A task whose bench.json
reads back is finished and skipped on the next run; anything else (no file, a torn file) is run
again, and if its folder holds an optimize checkpoint the run resumes from it, so a crash loses at
most the graph node that was running. `<out>/bench_config.json` records the roles and budgets:
a folder never mixes results of two configurations.

Parallelism: with GPUs, one spawned worker process per GPU, its CUDA_VISIBLE_DEVICES set to that
GPU before it starts, so everything in it (the verifier's fork-server, an LLM planner or coder)
sees exactly one device and each GPU runs one task at a time. Without GPUs, the tasks run here, one
after another (the Triton interpreter: correctness only), or several at a time as below. Roles are
built once per worker, not per task: LLM planners and coders load their model once; planners keep no
per-task state (they read the run's history), so sharing one across tasks does not change their
choices.

A verifier that judges several programs at once (`concurrency` > 1: verifier=ray, one verdict per
actor; the interpreter with `workers` > 1, one per worker) is built once, here, and the bench runs
that many tasks at a time in threads of this process (`run_concurrently`); the GPUs are the actors'
(the job passes no `gpus`). With GPUs of its own the bench takes the path above instead: each
worker's local verifier sees one GPU (`concurrency` 1). The threads take turns:
everything but waiting for a verdict (planner, coder, graph, files, progress lines) runs one thread
at a time, as in the sequential loop, so roles need not be thread-safe (the fx tracer is not).
"""

from __future__ import annotations

import json
import multiprocessing
import multiprocessing.connection
import os
import queue
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hydra.utils import instantiate
from langgraph.checkpoint.sqlite import SqliteSaver
from rich.console import Console

from mtmc.bench.metrics import ROW_FIELDS, Row, error_row, missing_row, task_row
from mtmc.bench.results import progress_line
from mtmc.bench.roofline import Calibration
from mtmc.budgets import Budgets
from mtmc.optimize import CHECKPOINTS, THREAD_ID, RunStopped, run_optimize
from mtmc.protocols import Coder, Planner, Verifier
from mtmc.report import write_atomic
from mtmc.tasks import Task, TaskError

TASK_RESULT = "bench.json"
CONFIG = "bench_config.json"
# Bump when a row's meaning changes: older bench.json files then count as unfinished (2: port_ms).
FORMAT = 2
# Verifiers whose workers hold the GPUs themselves, anywhere on a cluster: the bench starts no GPU
# workers of its own and runs here, as many tasks at a time as the verifier judges programs at once.
CLUSTER_VERIFIERS = {"mtmc.verify.ray_backend.RayVerifier"}
# Verifiers that read recorded verdicts and need no GPU: the tasks run here, one after another.
OFFLINE_VERIFIERS = {"mtmc.tree.ReplayVerifier", "mtmc.tree.replay.ReplayVerifier"}


class FolderInUse(ValueError):
    """The benchmark folder holds results of another configuration."""


@dataclass(frozen=True)
class BenchJob:
    """Everything a worker needs besides its tasks; plain data, so it pickles into spawned workers."""

    out_dir: Path
    roles: dict[str, dict[str, Any]]  # planner / coder / verifier `_target_` configs
    budgets: Budgets  # each task's
    reward: dict[str, Any]  # a `_target_` config, built in the worker
    calibrations: list[Calibration]

    def record(self) -> dict[str, Any]:
        """The configuration a folder's results belong to, as bench_config.json holds it."""
        return {"roles": self.roles, "optimize": {**self.budgets.keywords(), "reward": self.reward}}


def run_bench(tasks: Sequence[Task], out_dir: str | Path, *, roles: dict[str, dict[str, Any]],
              budgets: Budgets, reward: dict[str, Any], gpus: Sequence[int | str] = (),
              calibrations: Sequence[Calibration] = (), retry_errors: bool = False,
              console: Console | None = None) -> list[Row]:
    """Rows in suite order: finished earlier, run now, or `missing` (its worker died)."""
    console = console or Console(stderr=True)
    gpus = [str(g) for g in gpus]  # CUDA_VISIBLE_DEVICES entries: indices, or GPU/MIG UUIDs
    if roles["verifier"].get("_target_") in CLUSTER_VERIFIERS | OFFLINE_VERIFIERS:
        gpus = []  # the verifier's actors hold the GPUs, or it needs none
    job = BenchJob(Path(out_dir), dict(roles), budgets, dict(reward), list(calibrations))
    job.out_dir.mkdir(parents=True, exist_ok=True)
    check_config(job)
    rows = {t.name: row for t in tasks if (row := finished_row(job.out_dir / t.name, retry_errors))}
    todo = [t for t in tasks if t.name not in rows]
    where = f"{len(gpus)} GPU worker(s)" if gpus else "here"
    console.print(f"[bold]{len(tasks)} tasks[/]: {len(rows)} finished earlier (skipped), {len(todo)} to run "
                  f"({where}) -> {job.out_dir}", soft_wrap=True)

    def report(row: Row) -> None:
        rows[row["task"]] = row
        console.print(progress_line(row, len(rows), len(tasks)), highlight=False, soft_wrap=True)

    if todo and gpus:
        run_on_gpus(todo, job, gpus, report, console)
    elif todo:
        with built_roles(job.roles) as roles_:
            slots = min(getattr(roles_.verifier, "concurrency", 1), len(todo))
            if slots > 1:
                console.print(f"{slots} tasks at a time: the verifier judges {slots} programs at once",
                              soft_wrap=True)
                run_concurrently(todo, roles_, job, report, slots)
            else:
                for task in todo:
                    report(run_task(task, roles_, job))
    return [rows.get(t.name) or missing_row(t) for t in tasks]


def select_tasks(tasks: Sequence[Task], names: Sequence[str] | None = None,
                 split: str | None = None) -> list[Task]:
    """The suite's tasks, narrowed to `names` (in suite order) and/or a split."""
    by_name = {t.name: t for t in tasks}
    if len(by_name) != len(tasks):
        raise TaskError("the suite has two tasks with the same name; each needs its own run folder")
    unknown = sorted(set(names or ()) - set(by_name))
    if unknown:
        raise TaskError(f"tasks={unknown}: not in the suite (it has {sorted(by_name)})")
    chosen = [t for t in tasks if names is None or t.name in names]
    return [t for t in chosen if split is None or t.split == split]


# ---------------------------------------------------------------------------------------------------
# one task


@dataclass
class Roles:
    planner: Planner
    coder: Coder
    verifier: Verifier


@contextmanager
def built_roles(roles: dict[str, dict[str, Any]]) -> Iterator[Roles]:
    planner, coder = instantiate(roles["planner"]), instantiate(roles["coder"])
    with instantiate(roles["verifier"]) as verifier:
        yield Roles(planner, coder, verifier)


def run_task(task: Task, roles: Roles, job: BenchJob) -> Row:
    """Optimize one task into its folder and write its row; a task that raises becomes an error row."""
    folder = job.out_dir / task.name
    folder.mkdir(parents=True, exist_ok=True)
    start, started = time.monotonic(), time.time()
    try:
        # The per-attempt lines of optimize go to the task's log: with several GPUs they would interleave.
        with (folder / "optimize.log").open("a") as log:
            result = run_optimize(task, roles.planner, roles.coder, roles.verifier, folder,
                                  budgets=job.budgets, reward=instantiate(job.reward),
                                  resume=has_checkpoint(folder), console=Console(file=log, width=120))
        row = task_row(task, result.result, result.trajectory, time.monotonic() - start, job.calibrations)
    except RunStopped:
        # Ctrl-C (or a deadline's SIGINT), or a coder's server gone: not a result. No row, so the next
        # run resumes the task from its checkpoint; and the bench stops here rather than go on to the
        # next task, whose verifier workers the same signal has killed (on an H100 x4 run, 20 queued
        # tasks were recorded as 0.4 s harness errors after a deadline, and skipped on resume).
        raise
    except Exception as err:  # one broken task must not sink the suite; its row and error.txt say why
        (folder / "error.txt").write_text(traceback.format_exc())
        row = error_row(task, f"{type(err).__name__}: {err}", time.monotonic() - start)
    # wall-clock times, comparable across workers: a run's elapsed span and throughput
    row |= {"started": round(started, 3), "finished": round(time.time(), 3)}
    write_atomic(folder / TASK_RESULT, json.dumps({"format": FORMAT, "row": row}, indent=2) + "\n")
    return row


def finished_row(folder: Path, retry_errors: bool = False) -> Row | None:
    """The row in `folder/bench.json` if it is a complete result of this format, else None."""
    try:
        data = json.loads((folder / TASK_RESULT).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None  # never run, or torn by something other than write_atomic: run it (again)
    if data.get("format") != FORMAT or data["row"]["task"] != folder.name:
        return None
    if retry_errors and data["row"]["status"] == "error":
        return None
    return dict.fromkeys(ROW_FIELDS) | data["row"]  # rows written before a column was added lack it


def has_checkpoint(folder: Path) -> bool:
    """Whether an earlier optimize run in `folder` checkpointed at least one node."""
    if not (folder / CHECKPOINTS).is_file():
        return False
    with SqliteSaver.from_conn_string(str(folder / CHECKPOINTS)) as saver:
        return saver.get_tuple({"configurable": {"thread_id": THREAD_ID, "checkpoint_ns": ""}}) is not None


def check_config(job: BenchJob) -> None:
    """Record the roles and budgets on first use; refuse a folder that holds another configuration."""
    config = job.record()
    path = job.out_dir / CONFIG
    if not path.is_file():
        write_atomic(path, json.dumps(config, indent=2, sort_keys=True) + "\n")
        return
    recorded = json.loads(path.read_text())
    config = json.loads(json.dumps(config))  # tuples become lists, as in the file
    if recorded != config:
        changed = [f"{part}.{key}" for part, values in config.items() for key, value in values.items()
                   if recorded.get(part, {}).get(key) != value]
        raise FolderInUse(f"{job.out_dir} holds results of another configuration (differs in {changed}); "
                         f"use a fresh folder, or the configuration recorded in {CONFIG}")


# ---------------------------------------------------------------------------------------------------
# a concurrent verifier (verifier=ray): several tasks in threads here, taking turns but for verdicts


class _VerifyWithoutTurn:
    """The shared verifier, called with the turn released while its verdict is on the way."""

    def __init__(self, verifier: Verifier, turn: threading.Lock) -> None:
        self.verifier = verifier
        self.turn = turn

    def verify(self, task: Task, program: Any) -> Any:
        self.turn.release()
        try:
            return self.verifier.verify(task, program)
        finally:
            self.turn.acquire()


def run_concurrently(todo: Sequence[Task], roles: Roles, job: BenchJob, report: Callable[[Row], None],
                     slots: int) -> None:
    """`slots` threads take the tasks in suite order; one holds the turn at a time but while it waits
    for a verdict, so up to `slots` verdicts are in flight and the rest runs as if sequential."""
    turn = threading.Lock()
    shared = Roles(roles.planner, roles.coder, _VerifyWithoutTurn(roles.verifier, turn))
    pending: queue.Queue[Task] = queue.Queue()
    for task in todo:
        pending.put(task)

    def work() -> None:
        with turn:
            while True:
                try:
                    task = pending.get_nowait()
                except queue.Empty:
                    return
                report(run_task(task, shared, job))  # run_task turns any exception into an error row

    # daemon: a Ctrl-C here ends the job; each unfinished task resumes from its checkpoint next time
    threads = [threading.Thread(target=work, name=f"mtmc-bench-{i}", daemon=True) for i in range(slots)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


# ---------------------------------------------------------------------------------------------------
# several GPUs: one spawned worker process per GPU


def run_on_gpus(todo: Sequence[Task], job: BenchJob, gpus: Sequence[str], report: Callable[[Row], None],
                console: Console) -> None:
    # spawn, not fork: the parent may have touched CUDA, and a forked CUDA context is unusable.
    ctx = multiprocessing.get_context("spawn")
    tasks = ctx.Queue()
    for task in todo:
        tasks.put(task)
    workers, pipes = {}, {}
    for gpu in list(gpus)[: len(todo)]:
        tasks.put(None)  # one stop sign per worker, behind every task
        # A pipe, not a queue, back: send() is written before it returns, so a worker that dies
        # right after saying which task it started has still said it.
        pipes[gpu], theirs = ctx.Pipe(duplex=False)
        with _environ(CUDA_VISIBLE_DEVICES=gpu):  # a spawned child copies the environment at start
            workers[gpu] = ctx.Process(target=_worker, args=(job, tasks, theirs), name=f"mtmc-bench-gpu{gpu}")
            workers[gpu].start()
        theirs.close()  # the child holds the only write end: its exit reads as EOF here
    try:
        _collect(workers, pipes, report, console)
    finally:
        for proc in workers.values():
            if proc.is_alive():
                proc.terminate()
            proc.join()


def _collect(workers: dict[str, Any], pipes: dict[str, Any], report: Callable[[Row], None],
             console: Console) -> None:
    """Rows as workers finish them, until every worker has exited; a dead worker's task is named."""
    running: dict[str, str] = {}  # gpu -> the task it is on
    by_pipe = {pipe: gpu for gpu, pipe in pipes.items()}
    while by_pipe:
        for pipe in multiprocessing.connection.wait(list(by_pipe)):
            gpu = by_pipe[pipe]
            try:
                kind, payload = pipe.recv()
            except EOFError:  # the worker exited: normally after its stop sign, or it died
                del by_pipe[pipe]
                workers[gpu].join()
                if workers[gpu].exitcode != 0:
                    console.print(f"[red]worker on GPU {gpu} died (exit code {workers[gpu].exitcode})[/] "
                                  f"while running {running.get(gpu, 'no task')}: that task has no result; "
                                  "run the bench again with the same out= to retry it", soft_wrap=True)
                continue
            if kind == "start":
                running[gpu] = payload
            elif kind == "stopped":
                running.pop(gpu, None)
                console.print(f"[yellow]GPU {gpu} stopped during {payload}[/]: it resumes from its "
                              "checkpoint when the bench runs again with the same out=", soft_wrap=True)
            else:
                running.pop(gpu, None)
                report(payload)


def _worker(job: BenchJob, tasks: Any, pipe: Any) -> None:
    with built_roles(job.roles) as roles:
        while (task := tasks.get()) is not None:
            pipe.send(("start", task.name))
            try:
                row = run_task(task, roles, job)
            except RunStopped as stop:  # no row: the task resumes next run; this worker takes no more
                pipe.send(("stopped", f"{task.name} ({stop.why})"))
                return
            pipe.send(("row", row))


@contextmanager
def _environ(**values: str) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def visible_gpus(spec: Sequence[int | str] | None) -> list[str]:
    """`None`: every GPU this process sees, as CUDA_VISIBLE_DEVICES entries; a list: those, as given."""
    if spec is not None:
        return [str(g) for g in spec]
    import torch

    count = torch.cuda.device_count()
    visible = [d.strip() for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    # Workers set CUDA_VISIBLE_DEVICES themselves, so our logical ids become the entries they stand for.
    return [visible[i] if i < len(visible) else str(i) for i in range(count)]
