"""One recording split between independent recorders (one per GPU, each with its own tree file,
merged afterwards by merge.py): `mtmc tree record shard=I/N` records only shard I of N.

    counts = program_counts(tasks, coder, depth=2)   # per task: programs within 2 steps, by the coder
    shards = split(counts, 4)                        # 4 lists of task names, balanced by those counts

The tasks differ a lot in work (a matmul's depth-2 tree holds ~150-200 programs, an elementwise
task's ~37), so the split is by each task's count of programs within `depth` steps of its port,
enumerated with the coder alone (no verifier: ~10 ms a program on the CPU, so ~12-35 s for the 41
built-ins at depth 2) as if every program were `ok`: an upper bound, since the recorder expands only
`ok` programs and a retry needs a verdict. The split is greedy, largest first, onto the shard with
the least so far (longest processing time first), so N recorders end within about one task of each
other. Every recorder computes it alike from the suite, the coder and `depth` (never from the tree
file, which each recorder extends on its own), so the shards cover each task exactly once.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from mtmc.program import Program
from mtmc.protocols import Coder
from mtmc.tasks import Task
from mtmc.tree.attempts import code

SHARD = re.compile(r"^\s*(\d+)\s*/\s*(\d+)\s*$")


def parse_shard(text: str) -> tuple[int, int]:
    """"I/N" as (I, N), 0 <= I < N."""
    match = SHARD.match(str(text))
    if not match or not 0 <= int(match[1]) < int(match[2]):
        raise ValueError(f"shard={text!r}: give I/N with 0 <= I < N (shard 0/4 is the first of four)")
    return int(match[1]), int(match[2])


def program_counts(tasks: Sequence[Task], coder: Coder, depth: int) -> dict[str, int]:
    """Per task, the distinct programs within `depth` steps of the port (the port included), every
    program expanded as if `ok`."""
    return {task.name: _count(task, coder, depth) for task in tasks}


def _count(task: Task, coder: Coder, depth: int) -> int:
    seen: set[str] = set()
    frontier: list[Program | None] = [None]
    for _ in range(depth + 1):
        reached = []
        for program in frontier:
            for strategy in coder.legal_strategies(task, program):
                child = None if strategy.is_stop else code(coder, task, program, strategy).child
                if child is not None and child.digest not in seen:
                    seen.add(child.digest)
                    reached.append(child)
        frontier = reached
    return len(seen)


def split(counts: Mapping[str, int], shards: int) -> list[list[str]]:
    """The task names in `shards` lists of near-equal total count: largest first (ties by name) onto
    the shard with the least so far (ties: the lowest shard), so the split depends on the counts alone."""
    if shards < 1:
        raise ValueError(f"shards must be >= 1, got {shards}")
    loads, parts = [0] * shards, [[] for _ in range(shards)]
    for name in sorted(counts, key=lambda n: (-counts[n], n)):
        least = min(range(shards), key=lambda i: (loads[i], i))
        loads[least] += counts[name]
        parts[least].append(name)
    return parts


def shard_tasks(tasks: Sequence[Task], coder: Coder, depth: int, shard: str) -> tuple[list[Task], str]:
    """Shard I of N of `tasks` (in the suite's order), and a line that gives the whole split."""
    index, shards = parse_shard(shard)
    counts = program_counts(tasks, coder, depth)
    parts = split(counts, shards)
    mine = set(parts[index])
    loads = ", ".join(f"{i}: {sum(counts[n] for n in part)} ({len(part)} tasks)"
                      for i, part in enumerate(parts))
    line = (f"shard {index}/{shards}: {len(mine)} of {len(tasks)} tasks, {sum(counts[n] for n in mine)} of "
            f"{sum(counts.values())} programs within {depth} step(s) if every one passed (shards {loads}): "
            + ",".join(parts[index]))
    return [task for task in tasks if task.name in mine], line
