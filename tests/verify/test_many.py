"""judge_concurrently (mtmc/verify/many.py), the one `verify_many` of every pooled verifier: every pair
once, in the order they finish, `workers` at a time; a VerifierError after the others' verdicts, by index.
The backends are built over a fake pool and engine (a real pool starts fork-servers: seconds)."""

from __future__ import annotations

import threading
import time

import pytest

from mtmc.program import Program
from mtmc.tasks import Task
from mtmc.verify import InterpreterVerifier, LocalVerifier, Status, Verdict, VerifierError
from mtmc.verify import verifier as verifier_module
from mtmc.verify.many import BatchError, judge_concurrently

TASK = Task(name="t", source="")


def pairs(n: int) -> list[tuple[Task, Program]]:
    return [(TASK, Program(f"# program {i}\n")) for i in range(n)]


def index_of(program: Program) -> int:
    return int(program.source.split()[2])


class InFlight:
    """A verify that counts the calls running at once (their peak: `most`)."""

    def __init__(self, pause_s: float = 0.05, fail: dict[int, Exception] | None = None) -> None:
        self.pause_s, self.fail = pause_s, fail or {}
        self.now = self.most = 0
        self.called: list[int] = []
        self.lock = threading.Lock()

    def __call__(self, task: Task, program: Program) -> Verdict:
        index = index_of(program)
        with self.lock:
            self.called.append(index)
            self.now += 1
            self.most = max(self.most, self.now)
        try:
            if index in self.fail:  # at once: the others are still running
                raise self.fail[index]
            time.sleep(self.pause_s)
            return Verdict(Status.OK, program.source)
        finally:
            with self.lock:
                self.now -= 1


def test_every_pair_once_in_the_order_they_finish():
    order = [2, 0, 3, 1]  # each pair finishes only once the one before it here has arrived
    go = [threading.Event() for _ in order]

    def verify(task: Task, program: Program) -> Verdict:
        assert go[index_of(program)].wait(10)
        return Verdict(Status.OK, program.source)

    go[order[0]].set()
    arrived = []
    for index, verdict in judge_concurrently(verify, pairs(4), workers=4):
        assert verdict.message == f"# program {index}\n"
        arrived.append(index)
        if len(arrived) < len(order):
            go[order[len(arrived)]].set()
    assert arrived == order


@pytest.mark.parametrize("workers", [1, 2])
def test_at_most_workers_at_once(workers):
    verify = InFlight()
    assert sorted(i for i, _ in judge_concurrently(verify, pairs(5), workers)) == list(range(5))
    assert verify.most == workers and sorted(verify.called) == list(range(5))
    assert list(judge_concurrently(verify, [], workers)) == []


@pytest.mark.parametrize("workers", [1, 3])
def test_a_verifier_error_comes_after_every_other_verdict_with_its_index(workers):
    errors = {1: VerifierError("task one's reference cannot run"), 3: VerifierError("three")}
    arrived = []
    with pytest.raises(BatchError, match="2 pair") as raised:
        for index, _ in judge_concurrently(InFlight(fail=errors), pairs(5), workers):
            arrived.append(index)
    assert sorted(arrived) == [0, 2, 4] and raised.value.errors == errors
    assert isinstance(raised.value, VerifierError)  # a caller that does not look stops as on verify's own


def test_any_other_exception_is_a_bug_raised_at_once():
    verify = InFlight(pause_s=0.2, fail={0: RuntimeError("a harness bug")})
    with pytest.raises(RuntimeError, match="a harness bug"):
        list(judge_concurrently(verify, pairs(8), workers=2))
    assert len(verify.called) < 8  # the pairs not started yet were dropped


# --- the backends: one program per worker --------------------------------------------------------------
class FakePool:
    def __init__(self, backend: str, envs: list[dict[str, str]], *_: object) -> None:
        self.workers = list(envs)


class FakeEngine:
    def __init__(self, pool: FakePool, *_: object) -> None:
        self.pool = pool
        self.verify = InFlight()


@pytest.mark.parametrize("backend", [InterpreterVerifier, LocalVerifier])
def test_the_backends_judge_one_program_per_worker_at_once(backend, monkeypatch):
    monkeypatch.setattr(verifier_module, "WorkerPool", FakePool)
    monkeypatch.setattr(verifier_module, "Engine", FakeEngine)
    verifier = backend(workers=2) if backend is InterpreterVerifier else backend(gpus=[0, 1])
    assert verifier.concurrency == 2
    assert sorted(i for i, _ in verifier.verify_many(pairs(4))) == [0, 1, 2, 3]
    assert verifier.engine.verify.most == 2
