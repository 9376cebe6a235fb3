"""The tree file: a JSONL record of every program reachable from a task's port, one row per line.

    {"kind": "node", "task": "softmax_lastdim", "parent": null, "strategy": "port", "rank": 0,
     "digest": "3f2a...", "depth": 0, "status": "ok", "candidate_ms": 0.41, ...}

Row kinds (`kind`):

- `node`: the first step that reached a program (breadth-first, so at its least depth), with its
  verdict: status, message, candidate / eager / torch.compile times, roofline floor, flags, device,
  verifier version, the settings it was judged with (`verifier_settings`: in full or in trusted
  batches, the seeds, the baselines, shared mode, the timing loop), and the fingerprints of the coder
  and the task that made it.
- `edge`: a later step that reached a program already recorded (`digest` names it), or a step the
  coder refused (`digest` null, `error` says why): it costs no verdict, but a planner walking the
  tree must see it as a step it could take.
- `expanded`: every legal step of that program has its row. A node without one is a leaf (the
  deepest level, a failed program, or a run cut off while expanding it): only `stop` is legal there.
- `retime`: one more verdict of a recorded program (`digest`), judged again by `mtmc tree retime` to
  measure the noise of its time: status, candidate and median ms, device, verifier version, wall_s.
  The node keeps its first verdict: replay, the environment and the report read node rows only.

`rank` is the step's place in the coder's legal menu, so a planner walking the tree sees the menu in
the coder's order. Rows are only ever appended: a rerun adds what is missing and repeats nothing.

Format 2 added `attempt` and the node's `reason` (Verdict.reason, which the coder's retry and the
heuristic planner act on). Format 1 files still read, as recorded without retries: a missing reason
reads as "", a missing attempt as 0; the recorder does not extend them (their failed verdicts lost
the reason that decides a retry's program).
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from mtmc.program import Program
from mtmc.strategies import Strategy
from mtmc.tasks import Task
from mtmc.verify.verdict import Verdict

FORMAT = 2  # bump when a row's meaning changes
READS = (1, 2)  # formats read: format 1 rows have no `reason` and no `attempt` (read as "" and 0)
MESSAGE_CHARS = 500  # failure messages are kept short: thousands of rows per file
Row = dict[str, Any]


def task_fingerprint(task: Task) -> str:
    """The task's source hash: a tree recorded from another version of a task does not describe it."""
    return hashlib.sha256(task.source.encode()).hexdigest()[:16]


def coder_fingerprint(coder: object) -> str:
    """A hash of the source files of the package that defines the coder's class (coders/template/ for
    the template coder): programs recorded with another version of it may no longer be produced."""
    module = inspect.getmodule(type(coder))
    path = Path(inspect.getfile(module))
    folder = path.parent if path.parent.joinpath("__init__.py").is_file() else None
    files = sorted(folder.rglob("*.py")) if folder else [path]
    digest = hashlib.sha256()
    for file in files:
        digest.update(str(file.relative_to(path.parent)).encode() + b"\0" + file.read_bytes() + b"\0")
    return f"{type(coder).__name__}:{digest.hexdigest()[:16]}"


SETTINGS_RECORDED = ("seeds", "baselines", "compile_baseline", "shared_gpus", "timing")


def verifier_settings(verifier: object, judge: str) -> dict[str, Any]:
    """What shaped the verdicts beyond the verifier's version: how they were judged (`each` program
    in full, or in trusted batches) and the engine's settings that change what a time means (the
    seeds, hence the timing sets; baselines; shared mode; the timing loop). A verifier without an
    engine (replay, a fake) records only `judge`."""
    settings = getattr(getattr(verifier, "engine", None), "settings", None)
    recorded = {name: getattr(settings, name) for name in SETTINGS_RECORDED if hasattr(settings, name)}
    return {"judge": judge, **recorded}


def node_row(task: Task, parent: str | None, strategy: Strategy, rank: int, program: Program, depth: int,
             verdict: Verdict, coder: str, settings: dict[str, Any] | None = None, attempt: int = 0) -> Row:
    """The row of a program reached for the first time, with its verdict (and `verifier_settings`);
    `attempt` > 0: by that retry of the step."""
    return {
        "kind": "node", "format": FORMAT, "task": task.name, "task_sha": task_fingerprint(task),
        "parent": parent, "strategy": str(strategy), "rank": rank, "attempt": attempt,
        "digest": program.digest, "depth": depth, "status": str(verdict.status), "reason": verdict.reason,
        "message": verdict.message[:MESSAGE_CHARS],
        "candidate_ms": verdict.candidate_ms, "candidate_median_ms": verdict.candidate_median_ms,
        "eager_ms": verdict.eager_ms, "compiled_ms": verdict.compiled_ms, "roofline_ms": verdict.roofline_ms,
        "triton_share": verdict.triton_share, "flags": list(verdict.flags), "device": verdict.device,
        "isolation": verdict.isolation, "verifier_version": verdict.verifier_version, "coder": coder,
        "wall_s": None if verdict.wall_s is None else round(verdict.wall_s, 3),
        "phases_s": dict(verdict.phases_s),  # where the verdict's time went: the recorder's throughput
        "verifier_settings": dict(settings or {}),
    }


def edge_row(task: Task, parent: str | None, strategy: Strategy, rank: int, depth: int,
             digest: str | None, error: str | None = None, attempt: int = 0) -> Row:
    """A step (or its retry `attempt`) to a program already recorded, or (digest None) one the coder
    refused."""
    return {"kind": "edge", "format": FORMAT, "task": task.name, "parent": parent, "strategy": str(strategy),
            "rank": rank, "attempt": attempt, "digest": digest, "depth": depth,
            "error": None if error is None else error[:MESSAGE_CHARS]}


def expanded_row(task: Task, digest: str, steps: int) -> Row:
    """Every one of the program's `steps` legal steps has its row."""
    return {"kind": "expanded", "format": FORMAT, "task": task.name, "digest": digest, "steps": steps}


def retime_row(task: Task, digest: str, verdict: Verdict) -> Row:
    """One more verdict of a recorded program, judged again to measure its time's noise."""
    return {"kind": "retime", "format": FORMAT, "task": task.name, "task_sha": task_fingerprint(task),
            "digest": digest, "status": str(verdict.status), "candidate_ms": verdict.candidate_ms,
            "candidate_median_ms": verdict.candidate_median_ms, "device": verdict.device,
            "verifier_version": verdict.verifier_version,
            "wall_s": None if verdict.wall_s is None else round(verdict.wall_s, 3)}


def verdict_of(row: Row) -> Verdict:
    """The recorded verdict of a node row, as the live verifier returned it (less its phase times and
    error sizes); a format 1 row's `reason` reads as ""."""
    return Verdict.from_dict({**row, "flags": list(row.get("flags") or []),
                              "isolation": row.get("isolation", "")})


def read_rows(path: str | Path) -> Iterator[Row]:
    """The file's rows in order; a torn last line (a run killed mid-write) is skipped, nothing else is."""
    path = Path(path)
    if not path.is_file():
        return
    lines = path.read_text().splitlines()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines):
                break  # the line a killed writer left half-written
            raise ValueError(f"{path}:{number}: not a JSON row") from None
        if row.get("format") not in READS:
            raise ValueError(f"{path}:{number}: tree format {row.get('format')!r}, this code reads "
                             f"{' and '.join(map(str, READS))}")
        yield row


class RowWriter:
    """Appends rows, one flushed line each, so a killed run loses at most the line being written."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.path.is_file():
            data = self.path.read_bytes()
            if data and not data.endswith(b"\n"):  # the torn line of a killed run: its row is redone
                with self.path.open("r+b") as f:
                    f.truncate(data.rfind(b"\n") + 1)
        self._file = self.path.open("a")

    def write(self, rows: Iterable[Row]) -> None:
        for row in rows:
            self._file.write(json.dumps(row, sort_keys=True) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> RowWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
