"""The recorder streams its jobs through the workers (mtmc/tree/stream.py): a slow job holds one worker,
not a level of them, while the other tasks go on to their next level; the tree is the same whatever
order the verdicts come in; an interrupted recording keeps its rows and resumes to the same tree."""

from __future__ import annotations

import itertools
import threading
import time

import pytest

from coders.template import TemplateCoder
from mtmc.tree import read_rows
from mtmc.tree.recorder import Recorder
from tests.tree.fakes import DigestVerifier, SleepyVerifier, is_port, tiny_task
from tests.tree.test_recorder import nodes, record, rows, three_tasks

coder = TemplateCoder()


def test_while_one_tasks_port_is_judged_the_other_tasks_judge_their_next_level(tmp_path):
    """a's port returns only once b's and c's level 1 have all started: a recorder that waited for the
    whole of level 0 before level 1 would hold it until the timeout."""
    whole = tmp_path / "whole.jsonl"
    record(whole, DigestVerifier(), depth=1, tasks=three_tasks())
    others = sum(1 for task, _, depth in nodes(whole) if task != "a" and depth == 1)
    started, enough, held = [], threading.Event(), []

    def seconds(task, program) -> float:
        if task.name == "a" and is_port(program):
            held.append(enough.wait(timeout=20))
        elif task.name != "a":
            started.append(program.digest)
            if len(started) == others + 2:  # their ports and their level 1
                enough.set()
        return 0.0

    verifier = SleepyVerifier(seconds, concurrency=3)
    path = tmp_path / "t.jsonl"
    summary = record(path, verifier, depth=1, tasks=three_tasks(), judge="batch", chunk=3)
    assert held == [True] and verifier.peak == 3 and summary.complete
    assert rows(path) == rows(whole)


def level_synchronous_bound(verifier: SleepyVerifier, path, workers: int) -> float:
    """The least a recorder that waits for a level before the next could take with these jobs: level 0's
    slowest job, then level 1's jobs spread evenly over the workers."""
    depth = {(r["task"], r["digest"]): r["depth"] for r in read_rows(path) if r["kind"] == "node"}
    seconds = {0: [], 1: []}
    for task, digests, start, end in verifier.jobs:
        seconds[depth[task, digests[0]]].append(end - start)
    return max(seconds[0]) + sum(seconds[1]) / workers


def test_a_slow_job_costs_its_own_time_not_a_level_of_idle_workers(tmp_path):
    """Four tasks on three workers, a's port 1.2 s, every other program 0.07 s (a level-1 job of three:
    0.21 s): b, c and d judge their level 1 on the two other workers while a's port runs."""
    def seconds(task, program) -> float:
        return 1.2 if task.name == "a" and is_port(program) else 0.07

    tasks = [*three_tasks(), tiny_task("d", scale=7)]
    verifier = SleepyVerifier(seconds, concurrency=3, failing="")
    path = tmp_path / "t.jsonl"
    summary = Recorder(coder, verifier, path, depth=1, judge="batch", chunk=3).run(tasks)
    bound = level_synchronous_bound(verifier, path, workers=3)
    print(f"streamed {summary.wall_s:.2f} s against a level-synchronous bound of {bound:.2f} s")
    assert summary.complete and summary.wall_s < bound - 0.25  # about 1.5 s against 2.0 s


@pytest.mark.parametrize("judge", ["each", "batch"])
def test_the_tree_is_the_same_whatever_order_the_verdicts_come_in(tmp_path, judge):
    tasks = [tiny_task("a"), tiny_task("b", scale=3)]
    whole = tmp_path / "whole.jsonl"
    record(whole, DigestVerifier(), tasks=tasks)  # one at a time: breadth-first over the tasks
    verifier = SleepyVerifier(lambda task, program: int(program.digest[4:6], 16) / 255 / 50, concurrency=4)
    path = tmp_path / "t.jsonl"
    assert record(path, verifier, tasks=tasks, judge=judge, chunk=3).complete
    order = [r["digest"] for r in read_rows(path) if r["kind"] == "node"]
    assert order != [r["digest"] for r in read_rows(whole) if r["kind"] == "node"]  # they came in another
    assert rows(path) == rows(whole)


def test_an_interrupted_recording_keeps_its_rows_and_resumes_to_the_same_tree(tmp_path):
    tasks = [tiny_task("a"), tiny_task("b", scale=3)]
    whole = tmp_path / "whole.jsonl"
    record(whole, DigestVerifier(), tasks=tasks)
    ticks = itertools.count()

    def clock() -> float:  # read on the recorder's thread once a verdict: Ctrl-C after about 20
        if next(ticks) == 22:
            raise KeyboardInterrupt
        return time.monotonic()

    path, verifier = tmp_path / "t.jsonl", SleepyVerifier(lambda task, program: 0.01, concurrency=3)
    with pytest.raises(KeyboardInterrupt):
        Recorder(coder, verifier, path, depth=2, judge="batch", chunk=3, clock=clock).run(tasks)
    written = {digest for _, digest, _ in nodes(path)}
    judged = {digest for _, digests, _, _ in verifier.jobs for digest in digests}
    assert 0 < len(written) < len(nodes(whole)) and written <= judged  # every row read back whole
    resumed = DigestVerifier()
    assert record(path, resumed, tasks=tasks).complete
    assert rows(path) == rows(whole) and not written & set(resumed.calls)  # nothing written judged again
