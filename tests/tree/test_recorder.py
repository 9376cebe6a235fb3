"""The tree recorder: breadth-first from the port, each program judged once, resumable, whole levels
left by a cut-off run; and one real tree recorded with the interpreter verifier."""

from __future__ import annotations

import json
import logging
from collections import Counter

import pytest

from coders.template import TemplateCoder
from mtmc.strategies import PORT
from mtmc.tree import load_tree, read_rows, record_tree
from mtmc.tree.recorder import Recorder
from tests.tree.fakes import (
    BatchVerifier,
    DigestVerifier,
    ManyVerifier,
    PoolVerifier,
    RefusingCoder,
    tiny_task,
)

coder = TemplateCoder()


def record(path, verifier, depth=2, tasks=None, **kwargs):
    return record_tree(tasks or [tiny_task()], coder, verifier, path, depth=depth, **kwargs)


def test_depth_two_tree_judges_each_program_once_at_its_least_depth(tmp_path):
    verifier = DigestVerifier()
    summary = record(tmp_path / "t.jsonl", verifier)
    rows = list(read_rows(tmp_path / "t.jsonl"))
    nodes = [r for r in rows if r["kind"] == "node"]
    assert summary.complete and summary.levels == 3 and summary.judged == len(nodes)
    assert sorted(verifier.calls) == sorted(r["digest"] for r in nodes)  # one verdict per digest
    assert len({r["digest"] for r in nodes}) == len(nodes)
    task = tiny_task()
    port = coder.apply(task, None, PORT)
    menu = [s for s in coder.legal_strategies(task, port) if not s.is_stop]
    by_digest = {r["digest"]: r for r in nodes}
    assert by_digest[port.digest]["depth"] == 0 and by_digest[port.digest]["parent"] is None
    for rank, strategy in enumerate(menu):  # every level-1 step is a row, in the menu's order
        child = coder.apply(task, port, strategy)
        step = next(r for r in rows if r["kind"] != "expanded" and r["parent"] == port.digest
                    and r["strategy"] == str(strategy))
        assert (step["digest"], step["rank"]) == (child.digest, rank)
        assert by_digest[child.digest]["depth"] == (0 if child.digest == port.digest else 1)
    assert max(r["depth"] for r in nodes) == 2
    expanded = {r["digest"] for r in rows if r["kind"] == "expanded"}
    assert expanded == {r["digest"] for r in nodes if r["depth"] < 2 and r["status"] == "ok"}
    assert {r["status"] for r in nodes} == {"ok", "incorrect"}  # failed programs are leaves
    first = nodes[0]
    assert first["coder"].startswith("TemplateCoder:") and first["device"] == "fake gpu"
    assert first["candidate_ms"] and first["eager_ms"] == 2.0 and first["roofline_ms"] == 0.25
    assert first["phases_s"] == {"worker.cases": 0.5}  # where its time went


def test_a_rerun_adds_nothing_and_judges_nothing(tmp_path):
    path = tmp_path / "t.jsonl"
    record(path, DigestVerifier())
    before = path.read_text()
    again = DigestVerifier()
    summary = record(path, again)
    assert summary.complete and again.calls == [] and path.read_text() == before
    assert summary.in_file == sum(1 for r in read_rows(path) if r["kind"] == "node")


def nodes(path) -> set[tuple[str, str, int]]:
    return {(r["task"], r["digest"], r["depth"]) for r in read_rows(path) if r["kind"] == "node"}


def rows(path) -> Counter:
    """The file's rows, less how each verdict was judged (a run resumed with another verifier differs
    there and only there)."""
    return Counter(json.dumps({k: v for k, v in r.items() if k != "verifier_settings"}, sort_keys=True)
                   for r in read_rows(path))


def three_tasks():
    return [tiny_task("a"), tiny_task("b", scale=3), tiny_task("c", scale=5)]


@pytest.fixture(scope="module")
def two_tasks_whole(tmp_path_factory):
    """Two tasks recorded to depth 2 in one run: what a cut run must come to once resumed."""
    tasks = [tiny_task("a"), tiny_task("b", scale=3)]
    full = tmp_path_factory.mktemp("whole") / "full.jsonl"
    record(full, DigestVerifier(), tasks=tasks)
    return tasks, full


@pytest.mark.parametrize("kind,judge",
                         [(DigestVerifier, "each"), (PoolVerifier, "each"), (BatchVerifier, "batch")])
def test_a_cut_run_leaves_whole_levels_and_resumes_to_the_same_tree(tmp_path, kind, judge, two_tasks_whole):
    tasks, full = two_tasks_whole
    total = len(nodes(full))
    cut = tmp_path / "cut.jsonl"
    verifier = kind()
    # the clock counts the verdicts asked for: the limit falls inside level 2; no job starts after it,
    # and the jobs running then (up to 4 programs, or 2 batches of `chunk`) end and are written
    summary = Recorder(coder, verifier, cut, depth=2, time_limit_s=total - 10, judge=judge, chunk=3,
                       clock=lambda: len(verifier.calls)).run(tasks)
    assert not summary.complete and summary.levels == 2
    assert summary.judged == len(verifier.calls) == len(nodes(cut))  # each verdict asked for is written
    assert {n for n in nodes(full) if n[2] < 2} <= nodes(cut)  # levels 0 and 1 of both tasks are whole
    resumed = DigestVerifier()
    assert record(cut, resumed, tasks=tasks).complete
    assert nodes(cut) == nodes(full) and len(verifier.calls) + len(resumed.calls) == total
    assert rows(cut) == rows(full)  # the same rows, in another order


@pytest.mark.parametrize("kind", [DigestVerifier, ManyVerifier, PoolVerifier])
def test_a_task_whose_reference_fails_is_left_out_and_the_others_are_recorded(tmp_path, kind, caplog):
    whole = tmp_path / "whole.jsonl"
    record(whole, DigestVerifier(), depth=1, tasks=[tiny_task("a"), tiny_task("c", scale=5)])
    path = tmp_path / "t.jsonl"
    verifier = kind(broken=("b",))  # its port raises VerifierError in the same batch as a's and c's
    with caplog.at_level(logging.ERROR, logger="mtmc.tree.recorder"):
        summary = record(path, verifier, depth=1, tasks=three_tasks())
    assert summary.complete and summary.broken == ("b",) and "b: left out: fake: the reference" in caplog.text
    assert rows(path) == rows(whole) and summary.judged == len(verifier.calls) == len(nodes(path))


def test_a_torn_last_line_is_dropped_and_its_row_redone(tmp_path):
    path = tmp_path / "t.jsonl"
    record(path, DigestVerifier(), depth=1)
    whole = path.read_text()
    path.write_text(whole[: whole.rstrip("\n").rfind("\n") + 1] + whole.splitlines()[-1][:20])
    record(path, DigestVerifier(), depth=1)
    assert path.read_text() == whole


def test_a_refused_step_is_an_edge_with_the_coders_error(tmp_path):
    path = tmp_path / "t.jsonl"
    record_tree([tiny_task()], RefusingCoder("vectorize"), DigestVerifier(), path, depth=1)
    tree = load_tree(path)
    port = tree.port("relu_scale")
    (refused,) = [s for s in tree.steps("relu_scale", port["digest"]) if s.strategy == "vectorize"]
    assert refused.digest is None and "fake: no vectorize" in refused.error


def test_an_existing_file_of_another_format_is_refused(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"kind": "node", "format": 999}) + "\n")
    with pytest.raises(ValueError, match="tree format 999"):
        record(path, DigestVerifier())


class FlakyMachine(DigestVerifier):
    """DigestVerifier whose verdicts on digests ending in `flaky` fail for the machine (a worker died,
    memory on a shared GPU): flagged `infrastructure`, as the real verifier flags them."""

    def __init__(self, flaky: str) -> None:
        super().__init__()
        self.flaky = flaky

    def verify(self, task, program):
        verdict = super().verify(task, program)
        if program.digest[-1] in self.flaky:
            verdict.status, verdict.flags = "crash", ["infrastructure: worker_died"]
        return verdict


def test_a_verdict_that_failed_for_the_machine_is_not_written_and_a_rerun_judges_it(tmp_path,
                                                                                    two_tasks_whole):
    tasks, full = two_tasks_whole
    path = tmp_path / "t.jsonl"
    first = record(path, FlakyMachine(flaky="37"), tasks=tasks)
    retried = {n for n in nodes(full) if n[1][-1] in "37" and n[2] > 0}
    assert retried and first.retry >= len(retried) and not first.complete
    assert not retried & nodes(path)  # no row for them: the file never says the program crashed
    again = record(path, DigestVerifier(), tasks=tasks)
    assert again.complete and again.retry == 0
    assert nodes(path) == nodes(full) and steps(path) == steps(full)  # the same programs and steps;
    # which of two parents reached a program first (its node row; the other's is an edge) may differ


def steps(path) -> set[tuple]:
    return {(r["task"], r.get("parent"), r.get("strategy"), r["digest"], r["kind"] == "expanded")
            for r in read_rows(path)}


def test_trusted_batches_record_the_tree_the_full_protocol_records(tmp_path):
    """judge=batch (mtmc/verify/batch.py) with the interpreter: the same programs, steps and statuses
    as judge=each, every node flagged `trusted_batch`; each worker takes up to `chunk` of a task."""
    from mtmc.verify import InterpreterVerifier

    tasks = [tiny_task(), tiny_task("relu_three", scale=3)]
    with InterpreterVerifier(seeds=1, workers=2) as verifier:
        each = record(tmp_path / "each.jsonl", verifier, depth=1, tasks=tasks)
        batch = record(tmp_path / "batch.jsonl", verifier, depth=1, tasks=tasks, judge="batch", chunk=3)
    assert each.complete and batch.complete and batch.judged == each.judged > 2
    assert steps(tmp_path / "batch.jsonl") == steps(tmp_path / "each.jsonl")
    statuses = {path: {(r["task"], r["digest"]): r["status"] for r in read_rows(tmp_path / path)
                       if r["kind"] == "node"} for path in ("each.jsonl", "batch.jsonl")}
    assert statuses["batch.jsonl"] == statuses["each.jsonl"]
    flagged = {path: ["trusted_batch" in r["flags"] for r in read_rows(tmp_path / path) if "flags" in r]
               for path in ("each.jsonl", "batch.jsonl")}
    assert all(flagged["batch.jsonl"]) and not any(flagged["each.jsonl"])
    settings = {path: {json.dumps(r["verifier_settings"], sort_keys=True) for r in read_rows(tmp_path / path)
                       if r["kind"] == "node"} for path in ("each.jsonl", "batch.jsonl")}
    assert [json.loads(one)["judge"] for one in settings["batch.jsonl"]] == ["batch"]
    assert [json.loads(one)["seeds"] for one in settings["each.jsonl"]] == [1]  # one setting for the file


def test_an_unknown_way_to_judge_is_refused(tmp_path):
    with pytest.raises(ValueError, match="judge must be one of each, batch"):
        Recorder(coder, DigestVerifier(), tmp_path / "t.jsonl", depth=1, judge="fast")


def test_a_long_level_says_how_far_it_is_and_how_fast_every_minute(tmp_path):
    path, lines = tmp_path / "t.jsonl", []

    def clock() -> float:  # 30 s a row written (a node row a verdict), so a line every second verdict
        return 30.0 * len(path.read_text().splitlines()) if path.is_file() else 0.0

    # (not a count of verdicts asked for: the next job starts before this one's verdict is written)
    Recorder(coder, DigestVerifier(), path, depth=1, clock=clock, progress=lines.append).run([tiny_task()])
    rates = [line for line in lines if "judged," in line]
    level_one = sum(1 for r in read_rows(tmp_path / "t.jsonl") if r["kind"] == "node" and r["depth"] == 1)
    assert rates and all(line.startswith("level 1: ") for line in rates)
    assert rates[-1].endswith("2.0 programs a minute") and f"of {level_one} judged" in rates[-1]
