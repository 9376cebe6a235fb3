"""Record a tree: every program within `depth` steps of each task's port, each judged once.

    summary = record_tree(tasks, TemplateCoder(), verifier, "tree.jsonl", depth=2, time_limit_s=540)

Breadth-first over all tasks together: level 0 (the ports) of every task, then level 1 of every
task, and so on, so a run cut off by `time_limit_s` leaves whole levels behind it. A program is
judged the first time the enumeration reaches it (de-duplicated by digest); only programs judged
`ok` are expanded, since the gate never continues from a failed one. A failed step is retried as the
graph's gate retries it, up to `max_retries` times with the failed verdict as the coder's feedback
(attempts.py): a tf32_beyond_eager port's fp32-exact twin is recorded, at the step's depth, and
expanded as the program the loop goes on from. A rerun enumerates again from
the ports (the coder is deterministic and cheap: ~6 ms a step) and judges and writes only what the
file lacks, so recording resumes across commands.

Each level is enumerated for every task first (every step applied), then the new programs of all the
tasks together are judged in batches of `batch` (default: the verifier's `concurrency`) that mix
tasks, so a level of few programs per task (level 0: one port each) still keeps every worker busy;
then each level's retries (the failed steps coded again, with the verdicts just written), then each
task's edge and expanded rows are written. A batch goes through `verify_many` where the
verifier has it (mtmc/verify/many.py: one program per worker at once, a GPU's fork-server for the
local verifier, a fork-server for the interpreter's `workers`, an actor for verifier=ray), else one
`verify` at a time, so any backend records. With `judge="batch"` each worker judges up to `chunk`
programs of one task in one child instead (mtmc/verify/batch.py: trusted batches, for the template
coder's programs only; the verdicts say `trusted_batch`). Node rows are written as verdicts come;
the time limit is checked between batches, so a batch in flight is written whole. A task whose
reference cannot run (VerifierError) is logged and left out, and the others go on. A verdict that
failed for the machine (`infrastructure`: a dead worker, out of memory on a shared GPU) is not
written and its parent not marked expanded, so the next run judges it again. On a GPU host, the
verifier's shared mode (mtmc/verify/timing_gpu.py) judges many programs per GPU at once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
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
from mtmc.verify import Verdict, VerifierError
from mtmc.verify.batch import judge_in_batches
from mtmc.verify.engine import cacheable
from mtmc.verify.many import BatchError, judge_concurrently, verify_pairs

log = logging.getLogger(__name__)
Frontier = list[tuple[str | None, Program | None]]  # (digest, program); (None, None) before the port
VerifyMany = Callable[[list[tuple[Task, Program]]], Iterator[tuple[int, Verdict]]]
LEVEL = 10**9  # `batch` for trusted batches: a whole level at once
JUDGES = ("each", "batch")  # each: the full protocol per program; batch: trusted batches (verify/batch.py)


@dataclass
class RecordSummary:
    judged: int = 0  # verdicts asked for in this run
    in_file: int = 0  # programs reached that the file already held
    refused: int = 0  # steps the coder refused (a retry it refused too)
    retried: int = 0  # retries that wrote another program than the failed attempt (tf32_beyond_eager)
    levels: int = 0  # levels finished (of depth + 1)
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


class _Rate:
    """A level's progress in words every `every_s` seconds of `clock`: judged so far of the level's
    programs, and the rate (a level of a few thousand programs runs for an hour on a GPU host)."""

    def __init__(self, level: int, total: int, clock: Callable[[], float], every_s: float = 60.0) -> None:
        self.level, self.total, self.clock, self.every_s = level, total, clock, every_s
        self.start = self.last = clock()
        self.done = 0

    def tick(self) -> str:
        self.done += 1
        now = self.clock()
        if now - self.last < self.every_s:
            return ""
        self.last = now
        per_min = 60 * self.done / max(now - self.start, 1e-9)
        return f"level {self.level}: {self.done} of {self.total} judged, {per_min:.1f} programs a minute"


class _Cut(Exception):
    """The time limit is spent: stop before the next batch."""


class Recorder:
    def __init__(self, coder: Coder, verifier: Verifier, path: str | Path, *, depth: int,
                 time_limit_s: float | None = None, batch: int | None = None, judge: str = "each",
                 chunk: int = 16, max_retries: int = MAX_RETRIES, clock: Callable[[], float] = time.monotonic,
                 progress: Callable[[str], None] = log.info) -> None:
        if depth < 0 or max_retries < 0:
            raise ValueError(f"depth and max_retries must be >= 0, got {depth} and {max_retries}")
        if judge not in JUDGES:
            raise ValueError(f"judge must be one of {', '.join(JUDGES)}, got {judge!r}")
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
        # programs judged between two looks at the clock: the verifier's parallelism (1 unless it has
        # one). Trusted batches look at it before each batch of `chunk` starts instead, so by default a
        # whole level streams through the workers (none waits for the slowest of a round: BENCHMARKS.md,
        # eighth session)
        self.batch = batch or (LEVEL if judge == "batch" else getattr(verifier, "concurrency", 1))
        self.summary = RecordSummary()
        self.broken: dict[str, str] = {}  # task -> why its reference cannot run, in the order found
        self._rate = _Rate(0, 0, clock)  # the level being judged: progress lines as verdicts come

    def run(self, tasks: Sequence[Task]) -> RecordSummary:
        start = self.clock()
        frontier: dict[str, Frontier] = {task.name: [(None, None)] for task in tasks}
        seen: dict[str, set[str]] = {task.name: set() for task in tasks}
        with RowWriter(self.path) as self.out:
            try:
                for level in range(self.depth + 1):
                    self._level(tasks, frontier, seen, level)
                    self.summary.levels = level + 1
                self.summary.complete = not self.summary.retry  # else a rerun judges those again
            except _Cut:
                self.progress(f"time limit: stopped in level {self.summary.levels}; run again to continue")
        self.summary.wall_s = round(self.clock() - start, 3)
        self.summary.broken = tuple(self.broken)
        return self.summary

    def _level(self, tasks: Sequence[Task], frontier: dict[str, Frontier], seen: dict[str, set[str]],
               level: int) -> None:
        """Enumerate every task's level (cheap), judge the new programs of all of them together, then
        write each task's other rows and set its frontier to the level's new ok programs."""
        task_levels = [self._enumerate(task, frontier[task.name], seen[task.name])
                       for task in tasks if task.name not in self.broken]
        self._judge([(one.task, step) for one in task_levels for step in one.fresh], level)
        for attempt in range(1, self.max_retries + 1):  # the gate's retries, round by round
            retries = [(one.task, step) for one in task_levels if one.task.name not in self.broken
                       for step in self._retries(one, attempt, seen[one.task.name])]
            self._judge(retries, level, f" (retry {attempt})")
        for one in task_levels:
            broken = one.task.name in self.broken
            frontier[one.task.name] = [] if broken else self._finish(one, level)

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

    def _judge(self, pairs: list[tuple[Task, _Step]], level: int, retry_round: str = "") -> None:
        """Verdicts for every task's new programs of this level (or of one round of its retries), `batch`
        at a time and tasks mixed (a level of few programs per task, such as the ports, still keeps
        every worker busy)."""
        if pairs:
            self.progress(f"level {level}{retry_round}: judging {len(pairs)} programs of "
                          f"{len({task.name for task, _ in pairs})} tasks, {self.batch} at a time")
        self._rate = _Rate(level, len(pairs), self.clock)
        for start in range(0, len(pairs), self.batch):
            self._deadline_check()
            chunk = [(task, step) for task, step in pairs[start:start + self.batch]
                     if task.name not in self.broken]  # a task found broken in an earlier batch
            if chunk:
                self._judge_batch(chunk, level)
        if self.judge == "batch":
            self._deadline_check()  # batches left unstarted at the deadline: the level is not whole

    def _judge_batch(self, chunk: list[tuple[Task, _Step]], level: int,
                     verify_many: VerifyMany | None = None) -> None:
        """Each node row is written as its verdict comes; a task whose pair raised VerifierError (its
        reference cannot run: no program of it can) is left out, the others go on."""
        answered: set[int] = set()
        pairs = [(task, step.child) for task, step in chunk]
        verify_many = verify_many or self._verify_many
        try:
            for index, verdict in verify_many(pairs):
                task, step = chunk[index]
                answered.add(index)
                if not cacheable(verdict):  # a dead worker, memory on a shared GPU: judged again next run
                    self.summary.retry += 1
                    continue
                self._write(node_row(task, step.parent, step.strategy, step.rank, step.child, level, verdict,
                                     self.fingerprint, self.settings, step.attempt))
                self.summary.judged += 1
                line = self._rate.tick()
                if line:
                    self.progress(line)
        except BatchError as err:  # many.py: each failed pair by index, after every other verdict
            for index, error in err.errors.items():
                self._leave_out(chunk[index][0], error)
        except VerifierError:
            # another kind of verify_many stopped at one without saying whose: the rest one at a time,
            # so that each error falls on its own task
            rest = [pair for index, pair in enumerate(chunk) if index not in answered]
            self._judge_batch(rest, level, self._one_at_a_time)

    def _verify_many(self, pairs: list[tuple[Task, Program]]) -> Iterator[tuple[int, Verdict]]:
        if self.judge == "batch":  # trusted batches: each task's programs `chunk` at a time in one child
            return judge_in_batches(self.verifier, pairs, self.chunk, stop=self._past_deadline)
        return verify_pairs(self.verifier, pairs)

    def _one_at_a_time(self, pairs: list[tuple[Task, Program]]) -> Iterator[tuple[int, Verdict]]:
        return judge_concurrently(self.verifier.verify, pairs, workers=1)  # here; errors as BatchError

    def _leave_out(self, task: Task, error: VerifierError) -> None:
        if task.name not in self.broken:
            log.error("%s: left out: %s", task.name, error)
            self.broken[task.name] = str(error)

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

    def _deadline_check(self) -> None:
        if self._past_deadline():
            raise _Cut

    def _past_deadline(self) -> bool:
        return self.deadline is not None and self.clock() >= self.deadline


def record_tree(tasks: Sequence[Task], coder: Coder, verifier: Verifier, path: str | Path, *, depth: int,
                time_limit_s: float | None = None, batch: int | None = None, judge: str = "each",
                chunk: int = 16, max_retries: int = MAX_RETRIES,
                progress: Callable[[str], None] = log.info) -> RecordSummary:
    recorder = Recorder(coder, verifier, path, depth=depth, time_limit_s=time_limit_s, batch=batch,
                        judge=judge, chunk=chunk, max_retries=max_retries, progress=progress)
    return recorder.run(tasks)
