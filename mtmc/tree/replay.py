"""`verifier=replay tree=<file>`: the Verifier protocol answered from a recorded tree, so any planner
runs offline through the same graph, gate, budgets and reward as a live run.

    mtmc bench suite=builtin planner=heuristic verifier=replay tree=<file> max_steps=2

A program the tree holds gets its recorded verdict (status, times, floor, device, flags). Any other
program, or one of a task whose source changed since the recording, gets an explicit `unrecorded`
verdict: never `ok`, never a guess. The bench counts them per task (`unrecorded` in results.csv);
within the recorded depth there should be none.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from mtmc.program import Program
from mtmc.tasks import Task
from mtmc.tree.format import task_fingerprint, verdict_of
from mtmc.tree.index import Tree, load_tree
from mtmc.verify.verdict import Status, Verdict


class ReplayVerifier:
    def __init__(self, tree: str | Path | None = None) -> None:
        if tree is None:
            raise ValueError("verifier=replay needs a tree file: give tree=<a file mtmc tree record wrote>")
        self.tree: Tree = load_tree(tree)
        self.unrecorded: Counter[str] = Counter()  # task -> unrecorded verdicts given

    def verify(self, task: Task, program: Program) -> Verdict:
        node = self.tree.node(task.name, program.digest)
        recorded_sha, current_sha = self.tree.task_sha.get(task.name), task_fingerprint(task)
        if node is not None and recorded_sha == current_sha:
            return verdict_of(node)
        self.unrecorded[task.name] += 1
        if recorded_sha is None:
            why = f"the tree {self.tree.path} holds no program of task {task.name}"
        elif recorded_sha != current_sha:
            why = f"task {task.name} changed since {self.tree.path} was recorded"
        else:
            why = f"program {program.digest} of task {task.name} is not in the tree {self.tree.path}"
        return Verdict(Status.UNRECORDED, message=f"unrecorded: {why}", device=self._device(task.name))

    def _device(self, task: str) -> str:
        # the recorded device, so a replayed bench reports as timed when the tree was
        return next((row["device"] for row in self.tree.task_nodes(task)), "replay")

    def close(self) -> None:
        pass

    def __enter__(self) -> ReplayVerifier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
