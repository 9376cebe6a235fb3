"""`mtmc tree check`: the share of a tree's programs that today's coder still produces.

A tree stays valid only while the coder writes the same programs: a change to the template coder
changes digests, and the replay verifier then answers `unrecorded`. This walks each task's tree
again with the coder (no verifier): from the port, through every legal step of each recorded
program the recording expanded, and counts the recorded programs it reaches again. A step whose
recorded verdict failed is retried as the recording retried it (attempts.py: up to `max_retries`, the
recorded verdict as the coder's feedback), so a tf32_beyond_eager port's fp32-exact twin, and all
below it, count as produced only while the coder still writes them from that feedback.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mtmc.program import Program
from mtmc.protocols import Coder
from mtmc.tasks import Task
from mtmc.tree.attempts import MAX_RETRIES, attempts, recorded_verdicts
from mtmc.tree.index import Tree


def reached_digests(tree: Tree, task: Task, coder: Coder, max_retries: int = MAX_RETRIES) -> set[str]:
    """Every program the coder reaches from the port through programs the tree expanded, a failed
    step's retries included."""
    reached: set[str] = set()
    recorded = recorded_verdicts(tree, task.name)
    frontier: list[Program | None] = [None]
    while frontier:
        program = frontier.pop()
        for strategy in coder.legal_strategies(task, program):
            if strategy.is_stop:
                continue
            for attempt in attempts(coder, task, program, strategy, recorded, max_retries):
                child = attempt.child
                if child is None or child.digest in reached:
                    continue
                reached.add(child.digest)
                if tree.is_expanded(task.name, child.digest):
                    frontier.append(child)
    return reached


def check_tree(tree: Tree, tasks: Sequence[Task], coder: Coder,
               max_retries: int = MAX_RETRIES) -> dict[str, Any]:
    """Per task: recorded programs, those the coder still produces, and the share overall."""
    rows = []
    for task in tasks:
        recorded = {row["digest"] for row in tree.task_nodes(task.name)}
        kept = recorded & reached_digests(tree, task, coder, max_retries)
        rows.append({"task": task.name, "recorded": len(recorded), "produced": len(kept)})
    recorded, produced = sum(r["recorded"] for r in rows), sum(r["produced"] for r in rows)
    return {"tasks": rows, "recorded": recorded, "produced": produced,
            "share": produced / recorded if recorded else None}
