"""Reads the adversarial corpus: every file in corpus/ states, in its header, what it must get.

    # PATTERN: S11 result cache keyed by id() of the input     (docs/design.md pattern and what it does)
    # TASK: softmax                                            (a task in tests/verify/tasks/)
    # EXPECT: rejected                                         (the verdict status)
    # MESSAGE: id() keys result caches                         (a substring of the verdict message;
    #                                                          " || " separates alternatives)
    # STATIC: off                                              (optional: bypass the static checks,
    #                                                          to test the runtime layers behind them)
    # BACKEND: gpu                                             (optional: only meaningful on a GPU)
    # EXPECT-GPU: / MESSAGE-GPU:                               (optional: what the GPU backend gives)
    # GAP: why the verifier does not catch it yet              (optional: a known hole; the test is
    #                                                          an xfail(strict) until it is closed)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from mtmc.program import Program
from mtmc.tasks import Task, load_task

HERE = Path(__file__).parent
CORPUS = HERE / "corpus"
HONEST = HERE / "honest"
TASKS = HERE / "tasks"
HEADER_KEYS = {"PATTERN", "TASK", "EXPECT", "MESSAGE", "STATIC", "BACKEND", "EXPECT-GPU", "MESSAGE-GPU",
               "GAP"}


@dataclass(frozen=True)
class CorpusEntry:
    path: Path
    pattern: str
    task_name: str
    expect: str
    message: str
    static: bool = True
    backend: str = "any"
    expect_gpu: str | None = None
    message_gpu: str | None = None
    gap: str | None = None  # a known hole: what the verifier misses, until it is closed

    @property
    def name(self) -> str:
        return self.path.stem

    def task(self) -> Task:
        return load_task(TASKS / f"{self.task_name}.py")

    def program(self) -> Program:
        return Program(self.path.read_text())

    def expected(self, gpu: bool) -> tuple[str, str]:
        if not gpu:
            return self.expect, self.message
        return self.expect_gpu or self.expect, self.message_gpu or self.message


def read_header(path: Path) -> dict[str, str]:
    fields = {}
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        key, _, value = line.lstrip("# ").partition(":")
        if key.strip().upper() in HEADER_KEYS:
            fields.setdefault(key.strip().upper(), value.strip())
    return fields


def corpus() -> list[CorpusEntry]:
    entries = []
    for path in sorted(CORPUS.glob("*.py")):
        h = read_header(path)
        entries.append(CorpusEntry(path=path, pattern=h["PATTERN"], task_name=h["TASK"], expect=h["EXPECT"],
                                   message=h["MESSAGE"], static=h.get("STATIC", "on") != "off",
                                   backend=h.get("BACKEND", "any"), expect_gpu=h.get("EXPECT-GPU"),
                                   message_gpu=h.get("MESSAGE-GPU"), gap=h.get("GAP")))
    return entries


def with_known_gaps(entries: list[CorpusEntry]) -> list:
    """pytest params; an entry with a GAP header is a strict xfail: it runs, and once the hole is
    closed the test fails until the header goes (a known hole stays visible, never silently passes)."""
    return [pytest.param(e, id=e.name, marks=pytest.mark.xfail(strict=True, reason=f"known gap: {e.gap}"))
            if e.gap else pytest.param(e, id=e.name) for e in entries]


def honest() -> list[tuple[str, Task, Program]]:
    """(name, task, program) of every honest candidate: each must get `ok`."""
    out = []
    for path in sorted(HONEST.glob("*.py")):
        task_name = read_header(path)["TASK"]
        out.append((path.stem, load_task(TASKS / f"{task_name}.py"), Program(path.read_text())))
    return out
