"""Record a tree: every program within `depth` steps of each task's port, each judged once.

    summary = record_tree(tasks, TemplateCoder(), verifier, "tree.jsonl", depth=2, time_limit_s=540)

Breadth-first over all tasks together: level 0 (the ports) of every task, then level 1 of every
task, and so on, so a run cut off by `time_limit_s` leaves whole levels behind it. A program is
judged the first time the enumeration reaches it (de-duplicated by digest); only programs judged
`ok` are expanded, since the gate never continues from a failed one. A rerun enumerates again from
the ports (the coder is deterministic and cheap: ~6 ms a step) and judges and writes only what the
file lacks, so recording resumes across commands.

Not built yet (issue 26): the GPU fast path (references and baselines once per task, compiles in
parallel worker processes). Programs are judged one at a time through the `Verifier` protocol, so
any backend records: the interpreter on a CPU (correctness only), the local verifier on a GPU.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mtmc.program import Program
from mtmc.protocols import Coder, CoderError, Verifier
from mtmc.tasks import Task
from mtmc.tree.format import RowWriter, coder_fingerprint, edge_row, expanded_row, node_row, read_rows
from mtmc.tree.index import Tree
from mtmc.verify import VerifierError

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


class _Cut(Exception):
    """The time limit is spent: stop before the next verdict."""


class Recorder:
    def __init__(self, coder: Coder, verifier: Verifier, path: str | Path, *, depth: int,
                 time_limit_s: float | None = None, clock: Callable[[], float] = time.monotonic,
                 progress: Callable[[str], None] = log.info) -> None:
        if depth < 0:
            raise ValueError(f"depth must be >= 0, got {depth}")
        self.coder, self.verifier, self.depth = coder, verifier, depth
        self.path = Path(path)
        self.tree = Tree.from_rows(read_rows(self.path), self.path)
        self.fingerprint = coder_fingerprint(coder)
        self.clock, self.progress = clock, progress
        self.deadline = None if time_limit_s is None else clock() + time_limit_s
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
        """Expand `parents` (the programs first reached at level - 1) into the level's new ok programs."""
        children: Frontier = []
        before = self.summary.judged
        for digest, program in parents:
            children += self._expand(task, digest, program, seen, level)
        if parents:
            self.progress(f"level {level} {task.name}: {len(children)} new ok programs "
                          f"({self.summary.judged - before} judged now)")
        return children

    def _expand(self, task: Task, parent: str | None, program: Program | None, seen: set[str],
                level: int) -> Frontier:
        legal = [s for s in self.coder.legal_strategies(task, program) if not s.is_stop]
        children: Frontier = []
        for rank, strategy in enumerate(legal):
            recorded = self.tree.has_step(task.name, parent, str(strategy))
            try:
                child = self.coder.apply(task, program, strategy)
            except CoderError as err:
                self.summary.refused += 1
                if not recorded:
                    self._write(edge_row(task, parent, strategy, rank, level, None, str(err)))
                continue
            first_reach = child.digest not in seen
            seen.add(child.digest)
            node = self.tree.node(task.name, child.digest)
            if node is None and first_reach:
                self._deadline_check()
                node = node_row(task, parent, strategy, rank, child, level, self.verifier.verify(task, child),
                                self.fingerprint)
                self.summary.judged += 1
                self._write(node)
            else:
                self.summary.in_file += first_reach
                if not recorded:
                    self._write(edge_row(task, parent, strategy, rank, level, child.digest))
            if first_reach and node is not None and node["status"] == "ok":
                children.append((child.digest, child))
        if parent is not None and not self.tree.is_expanded(task.name, parent):
            self._write(expanded_row(task, parent, len(legal)))
        return children

    def _write(self, row: dict) -> None:
        self.out.write([row])
        self.tree.add(row)

    def _deadline_check(self) -> None:
        if self.deadline is not None and self.clock() >= self.deadline:
            raise _Cut


def record_tree(tasks: Sequence[Task], coder: Coder, verifier: Verifier, path: str | Path, *, depth: int,
                time_limit_s: float | None = None,
                progress: Callable[[str], None] = log.info) -> RecordSummary:
    recorder = Recorder(coder, verifier, path, depth=depth, time_limit_s=time_limit_s, progress=progress)
    return recorder.run(tasks)
