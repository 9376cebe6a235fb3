"""Record a tree: every program within `depth` steps of each task's port, each judged once.

    summary = record_tree(tasks, TemplateCoder(), verifier, "tree.jsonl", depth=2, time_limit_s=540)

Breadth-first over all tasks together: level 0 (the ports) of every task, then level 1 of every
task, and so on, so a run cut off by `time_limit_s` leaves whole levels behind it. A program is
judged the first time the enumeration reaches it (de-duplicated by digest); only programs judged
`ok` are expanded, since the gate never continues from a failed one. A rerun enumerates again from
the ports (the coder is deterministic and cheap: ~6 ms a step) and judges and writes only what the
file lacks, so recording resumes across commands.

Each level of a task is enumerated first (every step applied), then its new programs are judged in
batches: through `verify_many` where the verifier has it (verifier=ray: one program per actor at
once), else one `verify` at a time, so any backend records: the interpreter on a CPU (correctness
only), the local verifier on a GPU. The time limit is checked between batches. Not built yet
(issue 26): the GPU fast path (references and baselines once per task, compiles in parallel worker
processes); a verifier offering it as `verify_many` would plug in here unchanged.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from mtmc.program import Program
from mtmc.protocols import Coder, CoderError, Verifier
from mtmc.strategies import Strategy
from mtmc.tasks import Task
from mtmc.tree.format import RowWriter, coder_fingerprint, edge_row, expanded_row, node_row, read_rows
from mtmc.tree.index import Tree
from mtmc.verify import Verdict, VerifierError

log = logging.getLogger(__name__)
Frontier = list[tuple[str | None, Program | None]]  # (digest, program); (None, None) before the port


@dataclass
class RecordSummary:
    judged: int = 0  # verdicts asked for in this run
    in_file: int = 0  # programs reached that the file already held
    refused: int = 0  # steps the coder refused
    levels: int = 0  # levels finished (of depth + 1)
    complete: bool = False  # False: the time limit cut the run; run it again to continue
    wall_s: float = 0.0
    broken: tuple[str, ...] = ()  # tasks whose reference could not run (VerifierError), left out


@dataclass(eq=False)
class _Step:
    """One legal step of a program, applied: its child program, or the coder's refusal."""

    parent: str | None
    rank: int
    strategy: Strategy
    child: Program | None
    error: str | None
    first: bool  # the enumeration reached this child for the first time here


class _Cut(Exception):
    """The time limit is spent: stop before the next verdict."""


class Recorder:
    def __init__(self, coder: Coder, verifier: Verifier, path: str | Path, *, depth: int,
                 time_limit_s: float | None = None, batch: int | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 progress: Callable[[str], None] = log.info) -> None:
        if depth < 0:
            raise ValueError(f"depth must be >= 0, got {depth}")
        self.coder, self.verifier, self.depth = coder, verifier, depth
        self.path = Path(path)
        self.tree = Tree.from_rows(read_rows(self.path), self.path)
        self.fingerprint = coder_fingerprint(coder)
        self.clock, self.progress = clock, progress
        self.deadline = None if time_limit_s is None else clock() + time_limit_s
        # programs judged between two looks at the clock: the verifier's parallelism (1 unless it has one)
        self.batch = batch or getattr(verifier, "concurrency", 1)
        self.summary = RecordSummary()

    def run(self, tasks: Sequence[Task]) -> RecordSummary:
        start = self.clock()
        frontier: dict[str, Frontier] = {task.name: [(None, None)] for task in tasks}
        seen: dict[str, set[str]] = {task.name: set() for task in tasks}
        broken: list[str] = []
        with RowWriter(self.path) as self.out:
            try:
                for level in range(self.depth + 1):
                    for task in tasks:
                        parents = frontier[task.name]
                        try:
                            frontier[task.name] = self._level(task, parents, seen[task.name], level)
                        except VerifierError as err:  # its reference cannot run: no program of it can
                            log.error("%s: left out: %s", task.name, err)
                            broken.append(task.name)
                            frontier[task.name] = []
                    self.summary.levels = level + 1
                self.summary.complete = True
            except _Cut:
                self.progress(f"time limit: stopped in level {self.summary.levels}; run again to continue")
        self.summary.wall_s = round(self.clock() - start, 3)
        self.summary.broken = tuple(broken)
        return self.summary

    def _level(self, task: Task, parents: Frontier, seen: set[str], level: int) -> Frontier:
        """Expand `parents` (the programs first reached at level - 1) into the level's new ok programs:
        enumerate every step, judge the new programs (in batches), then write the steps' other rows."""
        steps = [step for digest, program in parents for step in self._menu(task, digest, program, seen)]
        fresh = [s for s in steps if s.first and self.tree.node(task.name, s.child.digest) is None]
        self.summary.in_file += sum(s.first for s in steps) - len(fresh)
        self._judge(task, fresh, level)
        judged = {id(step) for step in fresh}
        for step in steps:
            if id(step) not in judged and not self.tree.has_step(task.name, step.parent, str(step.strategy)):
                digest = None if step.child is None else step.child.digest
                self._write(edge_row(task, step.parent, step.strategy, step.rank, level, digest, step.error))
        for digest, _ in parents:
            if digest is not None and not self.tree.is_expanded(task.name, digest):
                self._write(expanded_row(task, digest, sum(s.parent == digest for s in steps)))
        children = [(s.child.digest, s.child) for s in steps
                    if s.first and self.tree.node(task.name, s.child.digest)["status"] == "ok"]
        if parents:
            self.progress(f"level {level} {task.name}: {len(children)} new ok programs "
                          f"({len(fresh)} judged now)")
        return children

    def _menu(self, task: Task, parent: str | None, program: Program | None, seen: set[str]) -> list[_Step]:
        """Every legal step of `program`, applied (cheap: the coder is deterministic and local)."""
        legal = [s for s in self.coder.legal_strategies(task, program) if not s.is_stop]
        steps = []
        for rank, strategy in enumerate(legal):
            try:
                child = self.coder.apply(task, program, strategy)
            except CoderError as err:
                self.summary.refused += 1
                steps.append(_Step(parent, rank, strategy, None, str(err), first=False))
                continue
            steps.append(_Step(parent, rank, strategy, child, None, first=child.digest not in seen))
            seen.add(child.digest)
        return steps

    def _judge(self, task: Task, fresh: list[_Step], level: int) -> None:
        """Verdicts for the new programs, `batch` at a time; each row is written as its verdict comes."""
        for start in range(0, len(fresh), self.batch):
            self._deadline_check()
            chunk = fresh[start:start + self.batch]
            for index, verdict in self._verdicts(task, [step.child for step in chunk]):
                step = chunk[index]
                self._write(node_row(task, step.parent, step.strategy, step.rank, step.child, level, verdict,
                                     self.fingerprint))
                self.summary.judged += 1

    def _verdicts(self, task: Task, programs: list[Program]) -> Iterator[tuple[int, Verdict]]:
        # verifier=ray judges a batch on all its actors at once (the order they finish in)
        if callable(getattr(self.verifier, "verify_many", None)):
            yield from self.verifier.verify_many([(task, program) for program in programs])
        else:
            for index, program in enumerate(programs):
                yield index, self.verifier.verify(task, program)

    def _write(self, row: dict) -> None:
        self.out.write([row])
        self.tree.add(row)

    def _deadline_check(self) -> None:
        if self.deadline is not None and self.clock() >= self.deadline:
            raise _Cut


def record_tree(tasks: Sequence[Task], coder: Coder, verifier: Verifier, path: str | Path, *, depth: int,
                time_limit_s: float | None = None, batch: int | None = None,
                progress: Callable[[str], None] = log.info) -> RecordSummary:
    recorder = Recorder(coder, verifier, path, depth=depth, time_limit_s=time_limit_s, batch=batch,
                        progress=progress)
    return recorder.run(tasks)
