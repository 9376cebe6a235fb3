"""A tree file read into lookups: each task's programs (nodes), the steps out of each program in the
coder's order, and which programs were expanded. Shared by the replay verifier, the environment and
the report; the recorder and the retimer read it to skip what is already there.

    tree = load_tree("benchmarks/results/tree-builtin-d2.jsonl")
    tree.port("softmax_lastdim")              # the port's node row
    tree.steps("softmax_lastdim", digest)     # [Step(strategy, rank, digest or None, error), ...]
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
    """One recorded step out of a program: where it leads (None: the coder refused it, `error` why)."""

    strategy: str
    rank: int
    digest: str | None
    error: str | None = None


@dataclass
class Tree:
    path: Path | None = None
    nodes: dict[tuple[str, str], Row] = field(default_factory=dict)  # (task, digest) -> node row
    out: dict[tuple[str, str | None], dict[str, Step]] = field(default_factory=lambda: defaultdict(dict))
    expanded: set[tuple[str, str]] = field(default_factory=set)
    task_sha: dict[str, str] = field(default_factory=dict)
    retimes: dict[tuple[str, str], list[Row]] = field(default_factory=dict)  # (task, digest) -> retime rows

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
        step = Step(row["strategy"], row["rank"], row["digest"], row.get("error"))
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

    def has_step(self, task: str, parent: str | None, strategy: str) -> bool:
        return strategy in self.out.get((task, parent), {})

    def is_expanded(self, task: str, digest: str) -> bool:
        return (task, digest) in self.expanded

    def port(self, task: str) -> Row | None:
        """The node the first step reaches (the template coder's only first step is `port`)."""
        first = self.steps(task, None)
        return self.node(task, first[0].digest) if first else None

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
