"""Trusted batches (mtmc/verify/batch.py, trusted_batch.py): many programs of one task in one child
give the verdict statuses the full protocol gives, flagged `trusted_batch`; a batch whose child dies
is judged again one program at a time; judge_in_batches groups each task's programs into batches.
The real ones run the interpreter verifier on a tiny task (seconds)."""

from __future__ import annotations

import pytest

from coders.template import TemplateCoder
from mtmc.program import Program
from mtmc.strategies import PORT
from mtmc.tasks import Task
from mtmc.verify import InterpreterVerifier, Status, Verdict, VerifierError
from mtmc.verify.batch import BATCH_ISOLATION, TRUSTED_BATCH_FLAG, _batches, judge_in_batches
from mtmc.verify.many import BatchError
from mtmc.verify.trusted_batch import device_broken
from tests.tree.fakes import tiny_task

TASK = tiny_task()
PORT_SOURCE = TemplateCoder().apply(TASK, None, PORT).source


def variant(old: str, new: str) -> Program:
    assert old in PORT_SOURCE
    return Program(PORT_SOURCE.replace(old, new))


PROGRAMS = {
    "ok": Program(PORT_SOURCE),
    "ok_other_block": Program(PORT_SOURCE.replace("1024", "256")),
    "incorrect": variant("relu * 2.0", "relu * 3.0"),
    "edits_input": variant("        return mul\n", "        x.zero_()\n        return mul\n"),
    "runtime_error": variant("        mul = _relu_mul(x)\n", "        raise ValueError('no')\n"),
    "compile_error": variant("tl.maximum(x, 0.0)", "tl.no_such_op(x, 0.0)"),
    "syntax_error": variant("def _relu_mul(x):", "def _relu_mul(x:"),
    "torch_compute": variant("        mul = _relu_mul(x)\n", "        mul = torch.relu(x) * 2\n"),
}


@pytest.fixture(scope="module")
def verifier():
    with InterpreterVerifier(seeds=1, workers=2) as v:
        yield v


def test_a_batch_gives_each_program_the_status_the_full_protocol_gives(verifier):
    programs = list(PROGRAMS.values())
    batch = verifier.verify_batch(TASK, programs)
    full = [verifier.verify(TASK, p) for p in programs]
    got = {name: (b.status, f.status) for name, b, f in zip(PROGRAMS, batch, full, strict=True)}
    assert {name: b for name, (b, f) in got.items()} == {name: f for name, (b, f) in got.items()}, got
    assert got["ok"][0] == got["ok_other_block"][0] == Status.OK
    assert got["incorrect"][0] == Status.INCORRECT and got["edits_input"][0] == Status.INCORRECT
    assert got["runtime_error"][0] == Status.RUNTIME_ERROR and got["compile_error"][0] == Status.COMPILE_ERROR
    assert got["syntax_error"][0] == Status.COMPILE_ERROR and got["torch_compute"][0] == Status.REJECTED
    for verdict in batch:
        assert TRUSTED_BATCH_FLAG in verdict.flags and verdict.isolation == BATCH_ISOLATION
        assert verdict.verifier_version and verdict.wall_s is not None
    assert "modified input" in batch[3].message and "ValueError: no" in batch[4].message


def test_a_batch_whose_child_dies_is_judged_again_one_program_at_a_time():
    dies = variant("        mul = _relu_mul(x)\n", "        import os\n        os._exit(3)\n")
    with InterpreterVerifier(seeds=1, static_checks=False) as verifier:  # os._exit passes: the child dies
        verdicts = verifier.verify_batch(TASK, [PROGRAMS["ok"], dies])
    assert [v.status for v in verdicts] == [Status.OK, Status.CRASH]
    assert all(TRUSTED_BATCH_FLAG not in v.flags and v.isolation != BATCH_ISOLATION for v in verdicts)


def test_batches_group_each_tasks_programs_in_runs_of_chunk_in_order():
    a, b = Task(name="a", source=""), Task(name="b", source="")
    pairs = [(a, Program("0")), (b, Program("1")), (a, Program("2")), (a, Program("3")), (b, Program("4"))]
    got = [(task.name, [i for i, _ in members]) for task, members in _batches(pairs, 2)]
    assert got == [("a", [0, 2]), ("a", [3]), ("b", [1, 4])]
    with pytest.raises(ValueError, match="chunk"):
        _batches(pairs, 0)


class FakeBatchVerifier:
    """verify_batch that names each program's source as its message; task `broken` raises."""

    concurrency = 2

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []

    def verify_batch(self, task: Task, programs: list[Program]) -> list[Verdict]:
        self.calls.append((task.name, len(programs)))
        if task.name == "broken":
            raise VerifierError("fake: no reference")
        return [Verdict(Status.OK, p.source) for p in programs]


def test_judge_in_batches_yields_every_pair_then_the_broken_tasks_pairs_as_one_error():
    good, broken = Task(name="good", source=""), Task(name="broken", source="")
    pairs = [(good, Program(str(i))) for i in range(5)] + [(broken, Program("x")), (broken, Program("y"))]
    fake = FakeBatchVerifier()
    seen = {}
    with pytest.raises(BatchError) as caught:
        for index, verdict in judge_in_batches(fake, pairs, 2):
            seen[index] = verdict.message
    assert seen == {i: str(i) for i in range(5)}
    assert sorted(caught.value.errors) == [5, 6]
    assert sorted(fake.calls) == [("broken", 2), ("good", 1), ("good", 2), ("good", 2)]


def test_batches_that_would_start_after_stop_do_not():
    good = Task(name="good", source="")
    fake = FakeBatchVerifier()
    fake.concurrency = 1  # one batch at a time: the stop falls between two
    pairs = [(good, Program(str(i))) for i in range(6)]
    seen = dict(judge_in_batches(fake, pairs, 2, stop=lambda: len(fake.calls) >= 2))
    assert sorted(seen) == [0, 1, 2, 3] and fake.calls == [("good", 2), ("good", 2)]


def test_judge_in_batches_refuses_a_verifier_without_verify_batch():
    class OneAtATime:
        concurrency = 1

        def verify(self, task, program):
            raise AssertionError("not called")

    with pytest.raises(VerifierError, match="verify_batch"):
        list(judge_in_batches(OneAtATime(), [(TASK, PROGRAMS["ok"])], 4))


def test_a_cuda_error_ends_the_batch_but_a_plain_error_is_the_programs():
    assert device_broken(RuntimeError("CUDA error: an illegal memory access was encountered"))
    assert not device_broken(ValueError("no")) and not device_broken(RuntimeError("shape mismatch"))
