"""A tree file read into lookups: each task's programs (nodes), the steps out of each program in the
coder's order, and which programs were expanded. Shared by the replay verifier, the environment and
the report; the recorder and the retimer read it to skip what is already there.

    tree = load_tree("benchmarks/results/tree-builtin-d2.jsonl")
    tree.port("softmax_lastdim")              # the port's node row
    tree.steps("softmax_lastdim", digest)     # [Step(strategy, rank, digest or None, error), ...]
    tree.retry("softmax_lastdim", digest, "port", 1)  # the step's first retry, where it wrote another program
    tree.retimed("softmax_lastdim", digest)   # its retime rows: more verdicts, for the noise
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from mtmc.tree.format import Row, read_rows


@dataclass(frozen=True)
class Step:
    """One recorded step out of a program: where it leads (None: the coder refused it, `error` why);
    `attempt` > 0: that retry of the step (format.py)."""

    strategy: str
    rank: int
    digest: str | None
    error: str | None = None
    attempt: int = 0


@dataclass
class Tree:
    path: Path | None = None
    nodes: dict[tuple[str, str], Row] = field(default_factory=dict)  # (task, digest) -> node row
    out: dict[tuple[str, str | None], dict[str, Step]] = field(default_factory=lambda: defaultdict(dict))
    expanded: set[tuple[str, str]] = field(default_factory=set)
    task_sha: dict[str, str] = field(default_factory=dict)
    retimes: dict[tuple[str, str], list[Row]] = field(default_factory=dict)  # (task, digest) -> retime rows
    # (task, parent, strategy) -> attempt -> the retry's step: kept apart from `out`, the menu they are not on
    retries: dict[tuple[str, str | None, str], dict[int, Step]] = field(default_factory=dict)
    formats: set[int] = field(default_factory=set)  # of node and edge rows: the recorder extends FORMAT only

    @classmethod
    def from_rows(cls, rows: Iterable[Row], path: Path | None = None) -> Tree:
        tree = cls(path=path)
        for row in rows:
            tree.add(row)
        return tree

    def add(self, row: Row) -> None:
        task = row["task"]
        if row["kind"] == "expanded":
            self.expanded.add((task, row["digest"]))
            return
        if row["kind"] == "retime":  # more verdicts of a node, for its noise: no step, nothing else changes
            self.retimes.setdefault((task, row["digest"]), []).append(row)
            return
        if row["kind"] == "node":
            self.nodes.setdefault((task, row["digest"]), row)
            self.task_sha.setdefault(task, row["task_sha"])
        elif row["kind"] != "edge":
            raise ValueError(f"unknown tree row kind {row['kind']!r}")
        self.formats.add(row["format"])
        step = Step(row["strategy"], row["rank"], row["digest"], row.get("error"), row.get("attempt", 0))
        if step.attempt:
            self.retries.setdefault((task, row["parent"], step.strategy), {}).setdefault(step.attempt, step)
        else:
            self.out[(task, row["parent"])].setdefault(step.strategy, step)

    # --- lookups -----------------------------------------------------------------------------------
    @property
    def tasks(self) -> list[str]:
        return sorted(self.task_sha)

    def node(self, task: str, digest: str | None) -> Row | None:
        return None if digest is None else self.nodes.get((task, digest))

    def steps(self, task: str, digest: str | None) -> list[Step]:
        """The recorded steps out of a program (None: before the port), in the coder's menu order."""
        return sorted(self.out.get((task, digest), {}).values(), key=lambda s: s.rank)

    def has_step(self, task: str, parent: str | None, strategy: str, attempt: int = 0) -> bool:
        if attempt:
            return self.retry(task, parent, strategy, attempt) is not None
        return strategy in self.out.get((task, parent), {})

    def retry(self, task: str, parent: str | None, strategy: str, attempt: int) -> Step | None:
        """The step's retry `attempt` (>= 1) where the coder wrote another program for it than for the
        attempt before; None: the attempt before's program again (or the recording did not retry so far)."""
        return self.retries.get((task, parent, strategy), {}).get(attempt)

    def is_expanded(self, task: str, digest: str) -> bool:
        return (task, digest) in self.expanded

    def port(self, task: str) -> Row | None:
        """The node the first step reaches (the template coder's only first step is `port`), its recorded
        retries followed while it fails: the port a run accepts (a tf32_beyond_eager port's fp32-exact
        twin)."""
        first = self.steps(task, None)
        if not first:
            return None
        step: Step | None = first[0]
        while step is not None:
            row = self.node(task, step.digest)
            if row is not None and row["status"] == "ok":
                return row
            step = self.retry(task, None, step.strategy, step.attempt + 1)
        return self.node(task, first[0].digest)

    def task_nodes(self, task: str) -> list[Row]:
        return [row for (name, _), row in self.nodes.items() if name == task]

    def retimed(self, task: str, digest: str) -> list[Row]:
        """The program's retime rows (`mtmc tree retime`), in file order."""
        return self.retimes.get((task, digest), [])


def load_tree(path: str | Path) -> Tree:
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no tree file (record one with `mtmc tree record tree={path}`)")
    return Tree.from_rows(read_rows(path), path)
