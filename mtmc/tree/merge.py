"""`mtmc tree merge tree=<out> parts=[a,b,...]`: tree files of shards (shard.py: one recorder per GPU,
each its own file) as one file that loads as a single recording of the same rows would.

    summary = merge_trees(["gpu0.jsonl", "gpu1.jsonl"], "tree.jsonl")

The parts' rows are kept in order, part by part. A task held by several parts (a part extended from a
copy of another, as benchmarks/tree_gpus.sh seeds each shard with the tree so far) is merged only if
its node rows were made alike: the same task source, coder and verifier, each part's set of
(task_sha, coder, verifier_version) holding the other's (the part extended by a newer recording
holds more); otherwise the merge is refused (MergeConflict), since the index would read the
programs of one recording under the task and coder of another. What a part repeats is left out as
the index itself would ignore it (index.py keeps the first of each): a node whose program and step
are held already, an edge of a step held already, an `expanded` held already, a retime row identical
to one held. A node whose program is held but whose step is new (two recordings reached it first by
different steps) becomes that step's edge, as the recorder writes a later step to a recorded program.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mtmc.report import write_atomic
from mtmc.tree.format import Row, read_rows
from mtmc.tree.index import Tree

Identity = frozenset[tuple[str, str, str]]  # a task's node rows' (task_sha, coder, verifier_version)


class MergeConflict(ValueError):
    """Two parts hold one task as recorded by different task sources, coders or verifiers."""


@dataclass
class MergeSummary:
    parts: int = 0
    rows: int = 0  # written
    repeated: int = 0  # left out: held already (a task in several parts)
    nodes: int = 0
    tasks: list[str] = field(default_factory=list)


def merge_trees(parts: Sequence[str | Path], out: str | Path) -> MergeSummary:
    """Write the parts' rows as one tree file at `out` (replaced at once; it may be one of the parts)."""
    files = [Path(p) for p in parts]
    missing = [str(p) for p in files if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"no tree file: {', '.join(missing)}")
    if Path(out).is_file() and Path(out).resolve() not in {p.resolve() for p in files}:
        raise FileExistsError(f"{out} exists and is not one of the parts: list it to keep its rows, or "
                              "remove it")
    rows = [list(read_rows(p)) for p in files]
    check_identities(files, rows)
    merged, summary = merge_rows(rows)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    write_atomic(Path(out), "".join(json.dumps(row, sort_keys=True) + "\n" for row in merged))
    summary.parts = len(files)
    return summary


def identities(rows: list[Row]) -> dict[str, Identity]:
    found: dict[str, set[tuple[str, str, str]]] = defaultdict(set)
    for row in rows:
        if row["kind"] == "node":
            found[row["task"]].add((row["task_sha"], row["coder"], row["verifier_version"]))
    return {task: frozenset(keys) for task, keys in found.items()}


def check_identities(files: Sequence[Path], rows: Sequence[list[Row]]) -> None:
    """Refuse a task whose node rows in two parts were made by different task sources, coders or
    verifiers (neither part's set of them holds the other's)."""
    first: dict[str, tuple[Path, Identity]] = {}
    for path, part in zip(files, rows, strict=True):
        for task, keys in identities(part).items():
            if task not in first:
                first[task] = (path, keys)
                continue
            other, held = first[task]
            if not (keys <= held or held <= keys):
                raise MergeConflict(f"{task}: recorded differently in {other} and {path} (task_sha, coder, "
                                    f"verifier_version: {sorted(held)} against {sorted(keys)}); merge "
                                    "only recordings of the same task, coder and verifier")
            first[task] = (other, held | keys)


def merge_rows(parts: Sequence[list[Row]]) -> tuple[list[Row], MergeSummary]:
    """The parts' rows in order, less those the index would ignore as held already."""
    tree, merged, summary, retimes = Tree(), [], MergeSummary(), set()
    for part in parts:
        for row in part:
            kept = _kept(tree, row, retimes)
            if kept is None:
                summary.repeated += 1
                continue
            tree.add(kept)
            merged.append(kept)
    summary.rows, summary.nodes, summary.tasks = len(merged), len(tree.nodes), tree.tasks
    return merged, summary


def _kept(tree: Tree, row: Row, retimes: set[str]) -> Row | None:
    """The row to write for `row` (itself, or a node's step as an edge), or None: held already."""
    task, kind = row["task"], row["kind"]
    if kind == "expanded":
        return None if tree.is_expanded(task, row["digest"]) else row
    if kind == "retime":
        text = json.dumps(row, sort_keys=True)
        if text in retimes:
            return None
        retimes.add(text)
        return row
    if kind == "node" and tree.node(task, row["digest"]) is None:
        return row  # a program first held here (its step, if held already, keeps the first's: index.py)
    held = tree.has_step(task, row["parent"], row["strategy"], row.get("attempt", 0))
    if held:
        return None
    return as_edge(row) if kind == "node" else row


def as_edge(node: Row) -> Row:
    """A node row's step, as the edge row the recorder writes for a later step to a recorded program."""
    return {"kind": "edge", "format": node["format"], "task": node["task"], "parent": node["parent"],
            "strategy": node["strategy"], "rank": node["rank"], "attempt": node.get("attempt", 0),
            "digest": node["digest"], "depth": node["depth"], "error": None}
