"""`mtmc tree retime`: judge each task's fastest recorded programs again, to measure how noisy the
tree's times are (noise.py turns the rows into the report).

    summary = retime_tree(tasks, TemplateCoder(), verifier, "tree.jsonl", top=5, repeats=2)

For each task the tree holds as it is now (same `task_sha`; any other is skipped with a log line), its
`top` fastest `ok` nodes by `candidate_ms` are rebuilt with the coder: the strategies along the
node's parent chain, replayed from the port (the coder is deterministic), a step a retry reached
retried as recorded (attempts.py: the recorded verdict as the coder's feedback). A program whose rebuilt
digest is not the node's (the coder changed since the recording), or whose path the coder no longer
takes, is skipped and counted as stale: never judged under the node's identity. Each rebuilt program
is judged `repeats` more times, and each verdict appended as a `retime` row (format.py).

Fresh measurements: a verdict cache would answer a repeat with the first verdict, timing nothing, so
a verifier holding one (`cache_path` set) is refused, and so is the replay verifier (it only reads
the tree back); see `check_fresh`. The repeats of one program go in different rounds (every
program once, then every program again), so where a task has more programs than workers they are
timed apart, not side by side. Batches go through `verify_many` where the verifier has it
(mtmc/verify/many.py: every GPU busy). A verdict that failed for the machine (`infrastructure`) is
not written, and a rerun judges it again; a program with `repeats` retime rows already is not.
With `judge="batch"` (the template coder's programs, as `mtmc tree record judge=batch` records them)
each task's verdicts go in trusted batches of up to `chunk` (batch.judge_in_batches): the same
timing loop as the recording's, so the spread compares like with like, at a recording's speed; a
repeat there is the program imported and timed again in the same child. Past `time_limit_s` no
batch starts (what is missing is judged by a rerun).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from mtmc.program import Program
from mtmc.protocols import Coder, Verifier
from mtmc.tasks import Task
from mtmc.tree.attempts import Recorded, attempts, recorded_verdicts
from mtmc.tree.format import Row, RowWriter, retime_row, task_fingerprint
from mtmc.tree.index import Tree, load_tree
from mtmc.tree.replay import ReplayVerifier
from mtmc.verify import VerifierError
from mtmc.verify.batch import judge_in_batches
from mtmc.verify.engine import cacheable
from mtmc.verify.many import BatchError, verify_pairs

log = logging.getLogger(__name__)
Pair = tuple[Task, Program]


class FreshnessError(ValueError):
    """The verifier could answer a repeat without measuring it again."""


@dataclass
class RetimeSummary:
    tasks: int = 0  # tasks held as they are now, whose top programs were looked at
    programs: int = 0  # top programs rebuilt with their recorded digest
    judged: int = 0  # retime rows written now
    in_file: int = 0  # retime rows the file already held for those programs (not judged again)
    stale: int = 0  # top programs the coder no longer writes (another digest, or a step it refuses)
    retry: int = 0  # verdicts that failed for the machine (infrastructure): not written, run again
    skipped: tuple[str, ...] = ()  # tasks not in the tree as they are now (changed since, or never)
    broken: tuple[str, ...] = ()  # tasks whose reference could not run (VerifierError), left out
    wall_s: float = 0.0


def check_fresh(verifier: Verifier) -> None:
    """Refuse a verifier that would serve a repeat from an earlier verdict instead of timing it."""
    if isinstance(verifier, ReplayVerifier):
        raise FreshnessError("retime needs fresh measurements: verifier=replay only reads the tree back")
    # LocalVerifier / InterpreterVerifier keep theirs on the engine, verifier=ray in the driver
    caches = (getattr(verifier, "cache", None), getattr(getattr(verifier, "engine", None), "cache", None))
    if any(cache is not None for cache in caches):
        raise FreshnessError("retime needs fresh measurements: this verifier has a verdict cache, which "
                             "would answer a repeat with the first verdict; give verifier.cache_path=null")


def top_nodes(tree: Tree, task: str, top: int) -> list[Row]:
    """The task's `top` fastest ok programs with a time (ties by digest, so the pick is stable)."""
    timed = [row for row in tree.task_nodes(task) if row["status"] == "ok" and row["candidate_ms"]]
    return sorted(timed, key=lambda row: (row["candidate_ms"], row["digest"]))[:top]


def strategy_path(tree: Tree, task: str, node: Row) -> list[tuple[str, int]]:
    """The strategies from before the port to `node`, each with the attempt that reached the next
    program (0: the step itself), along the parent chain of the node rows (each node row is the first
    step that reached its program, so the chain ends at the port)."""
    path, row = [], node
    while row is not None:
        path.append((row["strategy"], row.get("attempt", 0)))
        row = tree.node(task, row["parent"])
    return path[::-1]


def rebuild(coder: Coder, task: Task, path: Sequence[tuple[str, int]],
            recorded: Recorded = lambda digest: None) -> Program | None:
    """The program the coder writes along `path` (strategies and attempts as recorded; a retry's
    feedback is the `recorded` verdict of the attempt before), or None where a step is no longer on its
    menu, it refuses one, or a retry no longer writes another program."""
    program = None
    for text, number in path:
        menu = {str(strategy): strategy for strategy in coder.legal_strategies(task, program)}
        if text not in menu:
            return None
        chain = attempts(coder, task, program, menu[text], recorded, max_retries=number)
        program = chain[number].child if number < len(chain) else None
        if program is None:
            return None
    return program


class Retimer:
    """One retime run over a tree file: plan every task's missing verdicts, then judge them in batches."""

    def __init__(self, coder: Coder, verifier: Verifier, path: str | Path, *, top: int = 5,
                 repeats: int = 2, batch: int | None = None, clock: Callable[[], float] = time.monotonic,
                 progress: Callable[[str], None] = log.info, judge: str = "each", chunk: int = 16,
                 time_limit_s: float | None = None) -> None:
        if top < 1 or repeats < 1:
            raise ValueError(f"top and repeats must be >= 1, got top={top}, repeats={repeats}")
        if judge not in ("each", "batch"):
            raise ValueError(f"judge must be each or batch, got {judge!r}")
        check_fresh(verifier)
        self.judge, self.chunk = judge, chunk
        self.deadline = None if time_limit_s is None else clock() + time_limit_s
        self.coder, self.verifier, self.top, self.repeats = coder, verifier, top, repeats
        self.path = Path(path)
        self.tree = load_tree(self.path)
        self.batch = batch or getattr(verifier, "concurrency", 1)
        self.clock, self.progress = clock, progress
        self.summary = RetimeSummary()
        self.broken: dict[str, str] = {}  # task -> why its reference cannot run

    def run(self, tasks: Sequence[Task]) -> RetimeSummary:
        start = self.clock()
        held = [task for task in tasks if self._held(task)]
        self.summary.tasks = len(held)
        wanted = [(task, program, missing) for task in held for program, missing in self._programs(task)]
        # round by round: a program's repeats are timed apart (other programs between them)
        pairs = [(task, program) for round_ in range(self.repeats)
                 for task, program, missing in wanted if round_ < missing]
        if pairs:
            self.progress(f"retime: {len(pairs)} verdicts of {len(wanted)} programs of {len(held)} tasks, "
                          f"{self.batch} at a time")
        with RowWriter(self.path) as self.out:
            if self.judge == "batch":  # every pair at once: judge_in_batches keeps every worker busy
                self._judge_batch(pairs)
                pairs = []
            for start_at in range(0, len(pairs), self.batch):
                if self._past_deadline():
                    break
                chunk = [(task, program) for task, program in pairs[start_at:start_at + self.batch]
                         if task.name not in self.broken]  # a task found broken in an earlier batch
                if chunk:
                    self._judge_batch(chunk)
        self.summary.broken = tuple(self.broken)
        self.summary.wall_s = round(self.clock() - start, 3)
        return self.summary

    def _held(self, task: Task) -> bool:
        """Whether the tree holds the task as it is now; a log line for one it does not."""
        recorded = self.tree.task_sha.get(task.name)
        if recorded == task_fingerprint(task):
            return True
        why = "not in the tree" if recorded is None else "changed since the recording"
        self.progress(f"retime: {task.name} skipped: {why}")
        self.summary.skipped += (task.name,)
        return False

    def _programs(self, task: Task) -> list[tuple[Program, int]]:
        """The task's top programs, rebuilt, each with the verdicts it still lacks (stale ones counted)."""
        programs = []
        for node in top_nodes(self.tree, task.name, self.top):
            path = strategy_path(self.tree, task.name, node)
            program = rebuild(self.coder, task, path, recorded_verdicts(self.tree, task.name))
            if program is None or program.digest != node["digest"]:
                self.summary.stale += 1
                self.progress(f"retime: {task.name} {node['digest'][:12]}: the coder no longer writes it")
                continue
            self.summary.programs += 1
            done = len(self.tree.retimed(task.name, node["digest"]))
            self.summary.in_file += min(done, self.repeats)
            if done < self.repeats:
                programs.append((program, self.repeats - done))
        return programs

    def _judge_batch(self, chunk: list[Pair]) -> None:
        """Each verdict is written as it comes; a task whose pair raised VerifierError is left out."""
        try:
            verdicts = judge_in_batches(self.verifier, chunk, self.chunk, self._past_deadline) \
                if self.judge == "batch" else verify_pairs(self.verifier, chunk)
            for index, verdict in verdicts:  # every worker (GPU) at once
                task, program = chunk[index]
                if not cacheable(verdict):  # a dead worker, memory on a shared GPU: says nothing of the time
                    self.summary.retry += 1
                    continue
                self.out.write([retime_row(task, program.digest, verdict)])
                self.summary.judged += 1
        except BatchError as err:  # many.py: each failed pair by index, after every other verdict
            for index, error in err.errors.items():
                self._leave_out(chunk[index][0], error)

    def _past_deadline(self) -> bool:
        return self.deadline is not None and self.clock() >= self.deadline

    def _leave_out(self, task: Task, error: VerifierError) -> None:
        if task.name not in self.broken:
            log.error("%s: left out: %s", task.name, error)
            self.broken[task.name] = str(error)


def retime_tree(tasks: Sequence[Task], coder: Coder, verifier: Verifier, path: str | Path, *, top: int = 5,
                repeats: int = 2, batch: int | None = None, progress: Callable[[str], None] = log.info,
                judge: str = "each", chunk: int = 16, time_limit_s: float | None = None) -> RetimeSummary:
    return Retimer(coder, verifier, path, top=top, repeats=repeats, batch=batch, progress=progress,
                   judge=judge, chunk=chunk, time_limit_s=time_limit_s).run(tasks)
