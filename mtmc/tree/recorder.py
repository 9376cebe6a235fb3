"""Record a tree: every program within `depth` steps of each task's port, each judged once.

    summary = record_tree(tasks, TemplateCoder(), verifier, "tree.jsonl", depth=2, time_limit_s=540)

Breadth-first within each task: its level 0 (the port), then its level 1, and so on. A program is
judged the first time the enumeration reaches it (de-duplicated by digest); only programs judged
`ok` are expanded, since the gate never continues from a failed one. A failed step is retried as the
graph's gate retries it, up to `max_retries` times with the failed verdict as the coder's feedback
(attempts.py): a tf32_beyond_eager port's fp32-exact twin is recorded, at the step's depth, and
expanded as the program the loop goes on from. A rerun enumerates again from
the ports (the coder is deterministic and cheap: ~6 ms a step) and judges and writes only what the
file lacks, so recording resumes across commands.

Each task walks down its levels at its own pace, since nothing of a task's tree depends on another
task: its level is enumerated, its new programs judged, then its retries round by round (the failed
steps coded again, with the verdicts just written), then its edge and expanded rows are written and
its next level starts, whatever level the other tasks are at. The jobs of all the tasks stream
through the verifier's workers (stream.py): each starts as soon as a worker is free, a lower level's
first, so no worker waits for the slowest program of a level or of a round (69 s against a median of
a few seconds on an H100: BENCHMARKS.md, eighth session), and tasks mix (level 0, one port each,
still keeps every worker busy). A job is one program through `verify` (judge="each", the full
protocol), or up to `chunk` programs of one task in one child through `verify_batch` (judge="batch",
mtmc/verify/batch.py: trusted batches, for the template coder's programs only; the verdicts say
`trusted_batch`). Everything but the verifier's calls runs in this thread, and each task's steps are
taken in an order that no verdict's timing changes, so the file holds the same rows whatever order
the verdicts come in (only the order of the rows differs). Node rows are written as verdicts come.
Once `time_limit_s` is spent no job starts and no level is enumerated; the running jobs end and are
written, and a task whose level they complete gets its other rows, so each task's levels before the
cut are whole. A task whose reference cannot run (VerifierError) is logged and left out, and the
others go on. A verdict that failed for the machine (`infrastructure`: a dead worker, out of memory
on a shared GPU) is not written and its parent not marked expanded, so the next run judges it again.
On a GPU host, the verifier's shared mode (mtmc/verify/timing_gpu.py) judges many programs per GPU at
once.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

from mtmc.program import Program
from mtmc.protocols import Coder, Verifier
from mtmc.strategies import Strategy
from mtmc.tasks import Task
from mtmc.tree.attempts import MAX_RETRIES, Attempt, code, feedback, recorded_verdicts, retry
from mtmc.tree.format import (
    FORMAT,
    RowWriter,
    coder_fingerprint,
    edge_row,
    expanded_row,
    node_row,
    read_rows,
    verifier_settings,
)
from mtmc.tree.index import Tree
from mtmc.tree.stream import JobStream
from mtmc.verify import Verdict, VerifierError
from mtmc.verify.engine import cacheable

log = logging.getLogger(__name__)
Frontier = list[tuple[str | None, Program | None]]  # (digest, program); (None, None) before the port
JUDGES = ("each", "batch")  # each: the full protocol per program; batch: trusted batches (verify/batch.py)


@dataclass
class RecordSummary:
    judged: int = 0  # verdicts asked for in this run
    in_file: int = 0  # programs reached that the file already held
    refused: int = 0  # steps the coder refused (a retry it refused too)
    retried: int = 0  # retries that wrote another program than the failed attempt (tf32_beyond_eager)
    levels: int = 0  # levels every task finished (of depth + 1): edge and expanded rows written
    complete: bool = False  # False: the time limit cut the run; run it again to continue
    wall_s: float = 0.0
    broken: tuple[str, ...] = ()  # tasks whose reference could not run (VerifierError), left out
    retry: int = 0  # verdicts that failed for the machine, not the program (infrastructure): not written


@dataclass(eq=False)
class _Step:
    """One legal step of a program, applied: its child program, or the coder's refusal; `attempt` > 0:
    that retry of the step, coded with the attempt before's verdict."""

    parent: str | None
    rank: int
    strategy: Strategy
    child: Program | None
    error: str | None
    first: bool  # the enumeration reached this child for the first time here
    attempt: int = 0

    def as_attempt(self) -> Attempt:
        return Attempt(self.attempt, self.child, self.error)


@dataclass(eq=False)
class _TaskLevel:
    """One task's level, enumerated: every step of its parents, and the programs to judge among them."""

    task: Task
    parents: Frontier
    steps: list[_Step]  # the retries after the steps, in the order they were coded
    fresh: list[_Step]  # reached here first and not in the file yet
    waiting: set[str | None] = field(default_factory=set)  # parents of a step whose verdict a retry lacks


@dataclass(eq=False)
class _TaskRun:
    """One task's walk down its levels: the level it is at, enumerated, and the round of it being judged
    (0: its new programs; n: its n-th round of retries)."""

    task: Task
    frontier: Frontier  # the parents of its next level
    seen: set[str] = field(default_factory=set)  # digests the enumeration reached
    level: int = -1  # -1: before the port's
    one: _TaskLevel | None = None  # the level, until its rows are written
    round: int = 0
    jobs: int = 0  # the round's jobs not answered yet
    levels: int = 0  # levels finished


@dataclass(eq=False)
class _Job:
    """Programs of one task judged in one go: one (judge=each), or up to `chunk` (trusted batches)."""

    run: _TaskRun
    level: int
    steps: list[_Step]


class _Rate:
    """Progress in words every `every_s` seconds of `clock`: each unfinished level's verdicts so far of
    the programs queued for it so far (tasks reach a level at their own pace), and the rate (a level of
    a few thousand programs runs for an hour on a GPU host)."""

    def __init__(self, clock: Callable[[], float], every_s: float = 60.0) -> None:
        self.clock, self.every_s = clock, every_s
        self.start = self.last = clock()
        self.total: Counter[int] = Counter()
        self.done: Counter[int] = Counter()

    def add(self, level: int, programs: int) -> None:
        self.total[level] += programs

    def tick(self, level: int) -> str:
        self.done[level] += 1
        now = self.clock()
        if now - self.last < self.every_s:
            return ""
        self.last = now
        per_min = 60 * self.done.total() / max(now - self.start, 1e-9)
        shown = sorted({lv for lv in self.total if self.done[lv] < self.total[lv]} | {level})
        levels = ", ".join(f"level {lv}: {self.done[lv]} of {self.total[lv]} judged" for lv in shown)
        return f"{levels}, {per_min:.1f} programs a minute"


class Recorder:
    def __init__(self, coder: Coder, verifier: Verifier, path: str | Path, *, depth: int,
                 time_limit_s: float | None = None, batch: int | None = None, judge: str = "each",
                 chunk: int = 16, max_retries: int = MAX_RETRIES, clock: Callable[[], float] = time.monotonic,
                 progress: Callable[[str], None] = log.info) -> None:
        if depth < 0 or max_retries < 0 or chunk < 1:
            raise ValueError(f"depth and max_retries must be >= 0 and chunk >= 1, got {depth}, {max_retries} "
                             f"and {chunk}")
        if judge not in JUDGES:
            raise ValueError(f"judge must be one of {', '.join(JUDGES)}, got {judge!r}")
        if judge == "batch" and not callable(getattr(verifier, "verify_batch", None)):
            raise ValueError(f"judge=batch: {type(verifier).__name__} has no verify_batch (trusted batches "
                             "need the local or the interpreter verifier)")
        self.judge, self.chunk, self.max_retries = judge, chunk, max_retries
        self.coder, self.verifier, self.depth = coder, verifier, depth
        self.path = Path(path)
        self.tree = Tree.from_rows(read_rows(self.path), self.path)
        if self.tree.formats - {FORMAT}:
            # its failed verdicts lost the reason a retry's program depends on: its retries could be wrong
            raise ValueError(f"{self.path}: tree format {min(self.tree.formats)} (no verdict reasons, no "
                             f"retries); the recorder extends format {FORMAT} files only: record a new file")
        self.fingerprint = coder_fingerprint(coder)
        self.settings = verifier_settings(verifier, judge)
        self.clock, self.progress = clock, progress
        self.deadline = None if time_limit_s is None else clock() + time_limit_s
        # jobs at once: one per worker of the verifier (1 unless it has several), so each job starts on
        # a free worker and none queues inside the verifier, where a lower level could not overtake it
        self.batch = batch or getattr(verifier, "concurrency", 1)
        self.summary = RecordSummary()
        self.broken: dict[str, str] = {}  # task -> why its reference cannot run, in the order found
        self._rate = _Rate(clock)

    def run(self, tasks: Sequence[Task]) -> RecordSummary:
        start = self.clock()
        runs = [_TaskRun(task, [(None, None)]) for task in tasks]
        size = f"up to {self.chunk} programs of a task" if self.judge == "batch" else "one program"
        self.progress(f"{len(runs)} tasks to depth {self.depth}: {self.batch} jobs at once, {size} each")
        with RowWriter(self.path) as self.out, JobStream(self.batch, stop=self._past_deadline) as self.stream:
            for task_run in runs:  # each task's ports, judged as soon as they are coded
                self._advance(task_run)
            for job, future in self.stream:  # as each job ends, whichever task's
                self._answer(job, future)
                job.run.jobs -= 1
                self._advance(job.run)
        live = [task_run for task_run in runs if task_run.task.name not in self.broken]
        self.summary.levels = min((task_run.levels for task_run in live), default=self.depth + 1)
        whole = self.summary.levels == self.depth + 1
        self.summary.complete = whole and not self.summary.retry  # else a rerun judges those again
        if not whole:
            self.progress(f"time limit: stopped with {self.summary.levels} level(s) whole in every task; "
                          "run again to continue")
        self.summary.wall_s = round(self.clock() - start, 3)
        self.summary.broken = tuple(self.broken)
        return self.summary

    def _advance(self, run: _TaskRun) -> None:
        """Once a task's round is answered: queue its next round of retries, or write its level's other
        rows and queue its next level's new programs, until it has jobs to wait for or nothing left to
        do (its last level written, or the time limit spent)."""
        while run.jobs == 0 and run.task.name not in self.broken:
            if run.one is not None and run.round < self.max_retries:  # the gate's retries, round by round
                run.round += 1
                self._queue(run, self._retries(run.one, run.round, run.seen))
            elif run.one is not None:
                run.frontier, run.one = self._finish(run.one, run.level), None
                run.levels = run.level + 1
            elif run.level < self.depth and not self._past_deadline():
                run.level, run.round = run.level + 1, 0
                run.one = self._enumerate(run.task, run.frontier, run.seen)
                self._queue(run, run.one.fresh)
            else:
                return

    def _enumerate(self, task: Task, parents: Frontier, seen: set[str]) -> _TaskLevel:
        """Every step of `parents` (the programs first reached at the level before), applied, and the new
        programs among them that the file lacks."""
        steps = [step for digest, program in parents for step in self._menu(task, digest, program, seen)]
        fresh = [s for s in steps if s.first and self.tree.node(task.name, s.child.digest) is None]
        self.summary.in_file += sum(s.first for s in steps) - len(fresh)
        return _TaskLevel(task, parents, steps, fresh)

    def _menu(self, task: Task, parent: str | None, program: Program | None, seen: set[str]) -> list[_Step]:
        """Every legal step of `program`, applied (cheap: the coder is deterministic and local)."""
        legal = [s for s in self.coder.legal_strategies(task, program) if not s.is_stop]
        return [self._step(parent, rank, strategy, code(self.coder, task, program, strategy), seen)
                for rank, strategy in enumerate(legal)]

    def _step(self, parent: str | None, rank: int, strategy: Strategy, attempt: Attempt,
              seen: set[str]) -> _Step:
        if attempt.child is None:
            self.summary.refused += 1
            return _Step(parent, rank, strategy, None, attempt.error, False, attempt.number)
        first = attempt.child.digest not in seen
        seen.add(attempt.child.digest)
        return _Step(parent, rank, strategy, attempt.child, None, first, attempt.number)

    def _retries(self, one: _TaskLevel, attempt: int, seen: set[str]) -> list[_Step]:
        """The level's failed attempts `attempt - 1` coded again with their recorded verdicts as the
        feedback (attempts.py), added to the level's steps; returns the new programs to judge. A step
        whose verdict is missing (it failed for the machine) keeps its parent unexpanded: a rerun retries."""
        task, recorded, fresh = one.task, recorded_verdicts(self.tree, one.task.name), []
        programs = dict(one.parents)
        for step in [s for s in one.steps if s.attempt == attempt - 1]:
            verdict = feedback(step.as_attempt(), recorded)
            if verdict is None:
                one.waiting.add(step.parent)
                continue
            following = retry(self.coder, task, programs[step.parent], step.strategy, step.as_attempt(),
                              verdict, self.max_retries)
            if following is None:
                continue
            self.summary.retried += following.child is not None
            new = self._step(step.parent, step.rank, step.strategy, following, seen)
            one.steps.append(new)
            if new.first and self.tree.node(task.name, new.child.digest) is None:
                fresh.append(new)
            else:
                self.summary.in_file += new.first
        one.fresh += fresh
        return fresh

    def _queue(self, run: _TaskRun, steps: list[_Step]) -> None:
        """The steps' programs as jobs, keyed by their level: the stream starts a lower level's first."""
        size = self.chunk if self.judge == "batch" else 1
        for start in range(0, len(steps), size):
            job = _Job(run, run.level, steps[start:start + size])
            self.stream.put(run.level, job, self._verdicts, run.task, [step.child for step in job.steps])
            run.jobs += 1
        self._rate.add(run.level, len(steps))

    def _verdicts(self, task: Task, programs: list[Program]) -> list[Verdict]:
        """A job, on one of the stream's threads: nothing here touches the tree or the file."""
        if self.judge == "batch":  # trusted batches: the programs in one child
            return self.verifier.verify_batch(task, programs)
        return [self.verifier.verify(task, program) for program in programs]

    def _answer(self, job: _Job, future: Future) -> None:
        """A node row for each verdict of a job that ended; a VerifierError (its reference cannot run: no
        program of it can) leaves the task out, and the others go on."""
        task, level = job.run.task, job.level
        try:
            verdicts = future.result()
        except VerifierError as error:
            self._leave_out(job.run, error)
            return
        for step, verdict in zip(job.steps, verdicts, strict=True):
            if not cacheable(verdict):  # a dead worker, memory on a shared GPU: judged again next run
                self.summary.retry += 1
                continue
            self._write(node_row(task, step.parent, step.strategy, step.rank, step.child, level, verdict,
                                 self.fingerprint, self.settings, step.attempt))
            self.summary.judged += 1
            line = self._rate.tick(level)
            if line:
                self.progress(line)

    def _leave_out(self, run: _TaskRun, error: VerifierError) -> None:
        if run.task.name not in self.broken:
            log.error("%s: left out: %s", run.task.name, error)
            self.broken[run.task.name] = str(error)
        self.stream.drop(lambda job: job.run is run)  # its jobs running end and are written

    def _finish(self, one: _TaskLevel, level: int) -> Frontier:
        """Write the level's other rows of a task (steps to programs reached before, refused steps, its
        parents expanded) and return its new ok programs: the next level's parents."""
        task, judged = one.task, {id(step) for step in one.fresh}
        for step in one.steps:
            recorded = self.tree.has_step(task.name, step.parent, str(step.strategy), step.attempt)
            if id(step) in judged or recorded:
                continue
            digest = None if step.child is None else step.child.digest
            self._write(edge_row(task, step.parent, step.strategy, step.rank, level, digest, step.error,
                                 step.attempt))
        # not expanded while a step of it waits for a verdict (to be judged again, or retried, next run)
        waiting = {s.parent for s in one.fresh if self.tree.node(task.name, s.child.digest) is None}
        waiting |= one.waiting
        for digest, _ in one.parents:
            if digest is not None and digest not in waiting and not self.tree.is_expanded(task.name, digest):
                steps = sum(s.parent == digest and s.attempt == 0 for s in one.steps)  # the menu's
                self._write(expanded_row(task, digest, steps))
        children = [(s.child.digest, s.child) for s in one.steps
                    if s.first and (self.tree.node(task.name, s.child.digest) or {}).get("status") == "ok"]
        if one.parents:
            self.progress(f"level {level} {task.name}: {len(children)} new ok programs "
                          f"({len(one.fresh)} judged now)")
        return children

    def _write(self, row: dict) -> None:
        self.out.write([row])
        self.tree.add(row)

    def _past_deadline(self) -> bool:
        return self.deadline is not None and self.clock() >= self.deadline


def record_tree(tasks: Sequence[Task], coder: Coder, verifier: Verifier, path: str | Path, *, depth: int,
                time_limit_s: float | None = None, batch: int | None = None, judge: str = "each",
                chunk: int = 16, max_retries: int = MAX_RETRIES,
                progress: Callable[[str], None] = log.info) -> RecordSummary:
    recorder = Recorder(coder, verifier, path, depth=depth, time_limit_s=time_limit_s, batch=batch,
                        judge=judge, chunk=chunk, max_retries=max_retries, progress=progress)
    return recorder.run(tasks)
