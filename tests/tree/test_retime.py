"""`mtmc tree retime`: each task's top programs rebuilt and judged again into `retime` rows (resumable,
fresh verdicts only), and the noise report on hand-written rows with known times."""

from __future__ import annotations

import shutil
from collections import Counter
from types import SimpleNamespace

import pytest

from coders.template import TemplateCoder
from mtmc.strategies import PORT
from mtmc.tree import ReplayVerifier, load_tree, read_rows, record_tree
from mtmc.tree.check import check_tree
from mtmc.tree.format import FORMAT
from mtmc.tree.noise import noise_markdown, noise_report
from mtmc.tree.report import headroom
from mtmc.tree.retime import FreshnessError, check_fresh, rebuild, retime_tree, top_nodes
from planners.greedy import GreedyPlanner
from tests.tree.fakes import (
    DigestVerifier,
    EditingCoder,
    JitterVerifier,
    ManyVerifier,
    RefusingCoder,
    node,
    tiny_task,
    write_rows,
)

coder = TemplateCoder()
TASKS = [tiny_task("a"), tiny_task("b", scale=3)]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """Two tasks recorded to depth 1 with times by digest (some level-1 programs incorrect)."""
    path = tmp_path_factory.mktemp("recorded") / "tree.jsonl"
    record_tree(TASKS, coder, DigestVerifier(), path, depth=1)
    return path


@pytest.fixture
def tree_file(recorded, tmp_path):
    return shutil.copy(recorded, tmp_path / "tree.jsonl")


def retimes(path) -> Counter:
    return Counter((r["task"], r["digest"]) for r in read_rows(path) if r["kind"] == "retime")


def fastest(path, task, k) -> list[str]:
    """The k fastest ok programs of the task, from the node rows (independent of retime.py)."""
    ok = [r for r in read_rows(path) if r["kind"] == "node" and r["task"] == task and r["status"] == "ok"]
    return [r["digest"] for r in sorted(ok, key=lambda r: r["candidate_ms"])[:k]]


def test_the_top_fastest_ok_programs_are_rebuilt_and_judged_repeats_times(tree_file):
    nodes = [r for r in read_rows(tree_file) if r["kind"] == "node"]
    assert any(r["status"] != "ok" for r in nodes)  # failed programs exist, and are never picked
    verifier = JitterVerifier(factors=(1.02, 1.04))
    summary = retime_tree(TASKS, coder, verifier, tree_file, top=3, repeats=2)
    top = {(t.name, d) for t in TASKS for d in fastest(tree_file, t.name, 3)}
    assert retimes(tree_file) == {pair: 2 for pair in top}
    # the verifier saw the rebuilt programs: their digests are the recorded ones
    assert Counter(verifier.calls) == Counter({digest: 2 for _, digest in top})
    assert (summary.tasks, summary.programs, summary.judged, summary.stale) == (2, 6, 12, 0)
    row = next(r for r in read_rows(tree_file) if r["kind"] == "retime")
    assert set(row) == {"kind", "format", "task", "task_sha", "digest", "status", "candidate_ms",
                        "candidate_median_ms", "device", "verifier_version", "wall_s"}
    assert row["format"] == FORMAT and row["status"] == "ok" and row["device"] == "fake gpu"
    report = noise_report(load_tree(tree_file), TASKS, top=3)
    assert report["summary"]["max_spread"] == pytest.approx(1.04)  # recorded 1.0x, then 1.02x, 1.04x
    assert report["summary"]["share_within_limit"] == 1.0


def test_repeats_go_in_rounds_through_verify_many(tree_file):
    verifier = ManyVerifier()  # concurrency 4
    retime_tree(TASKS[:1], coder, verifier, tree_file, top=3, repeats=2)
    first, second, third = fastest(tree_file, "a", 3)
    assert verifier.batches == [[("a", first), ("a", second), ("a", third), ("a", first)],
                                [("a", second), ("a", third)]]


def test_a_rerun_judges_only_what_is_missing(tree_file):
    retime_tree(TASKS, coder, DigestVerifier(), tree_file, top=2, repeats=2)
    before = tree_file.read_text()
    again = DigestVerifier()
    summary = retime_tree(TASKS, coder, again, tree_file, top=2, repeats=2)
    assert again.calls == [] and tree_file.read_text() == before
    assert (summary.judged, summary.in_file) == (0, 8)
    more = DigestVerifier()
    assert retime_tree(TASKS, coder, more, tree_file, top=2, repeats=3).judged == 4  # one more each
    assert set(retimes(tree_file).values()) == {3}


def test_a_changed_or_unrecorded_task_is_skipped_with_a_line(tree_file):
    said, verifier = [], DigestVerifier()
    changed, absent = tiny_task("b", scale=7), tiny_task("c")
    summary = retime_tree([TASKS[0], changed, absent], coder, verifier, tree_file, top=2, repeats=1,
                          progress=said.append)
    assert summary.skipped == ("b", "c") and {t for t, _ in retimes(tree_file)} == {"a"}
    assert "retime: b skipped: changed since the recording" in said
    assert "retime: c skipped: not in the tree" in said


def test_a_program_the_coder_no_longer_writes_is_skipped_and_counted(tree_file):
    tree = load_tree(tree_file)
    top = top_nodes(tree, "a", 3)
    kind = top[0]["strategy"].split()[0]  # the fastest program's last step now writes another source
    edited = {r["digest"] for r in top if r["strategy"].split()[0] == kind}
    verifier = DigestVerifier()
    summary = retime_tree(TASKS[:1], EditingCoder(kind), verifier, tree_file, top=3, repeats=1)
    assert summary.stale == len(edited) and summary.programs == 3 - len(edited)
    assert set(verifier.calls) == {r["digest"] for r in top} - edited  # never under the old identity
    assert {d for _, d in retimes(tree_file)} == {r["digest"] for r in top} - edited


def test_rebuild_gives_none_where_a_step_is_refused_or_gone():
    task = tiny_task()
    assert rebuild(coder, task, [("port", 0)]).digest == coder.apply(task, None, PORT).digest
    assert rebuild(RefusingCoder("port"), task, [("port", 0)]) is None
    assert rebuild(coder, task, [("port", 0), ("num_warps 3", 0)]) is None  # not on the menu
    assert rebuild(coder, task, [("port", 1)]) is None  # a retry the coder no longer writes


def test_a_verdict_that_failed_for_the_machine_is_not_written_and_a_rerun_judges_it(tree_file):
    summary = retime_tree(TASKS, coder, JitterVerifier(dead=3), tree_file, top=2, repeats=2)
    assert (summary.retry, summary.judged) == (3, 5)
    assert all(r["status"] == "ok" for r in read_rows(tree_file) if r["kind"] == "retime")
    again = DigestVerifier()
    assert retime_tree(TASKS, coder, again, tree_file, top=2, repeats=2).judged == 3
    assert len(again.calls) == 3 and set(retimes(tree_file).values()) == {2}


def test_a_verifier_that_could_serve_a_cached_verdict_is_refused(tree_file):
    engine_cache = SimpleNamespace(engine=SimpleNamespace(cache=object()), verify=None)
    for verifier in (engine_cache, SimpleNamespace(cache=object()), ReplayVerifier(tree=tree_file)):
        with pytest.raises(FreshnessError, match="fresh measurements"):
            check_fresh(verifier)
    check_fresh(SimpleNamespace(cache=None, engine=SimpleNamespace(cache=None)))  # no cache: fine
    with pytest.raises(FreshnessError):
        retime_tree(TASKS, coder, ReplayVerifier(tree=tree_file), tree_file)
    assert retimes(tree_file) == {}


def test_a_tree_with_retime_rows_reads_replays_checks_and_reports_as_before(recorded, tree_file):
    retime_tree(TASKS, coder, JitterVerifier(factors=(1.1,)), tree_file, top=3, repeats=2)
    before, after = load_tree(recorded), load_tree(tree_file)
    assert after.retimes and not before.retimes
    assert (after.nodes, after.out, after.expanded, after.task_sha) == \
        (before.nodes, before.out, before.expanded, before.task_sha)
    assert check_tree(after, TASKS, coder) == check_tree(before, TASKS, coder)
    planners = {"greedy": [GreedyPlanner()]}
    assert headroom(after, TASKS, planners)["tasks"] == headroom(before, TASKS, planners)["tasks"]
    port = coder.apply(TASKS[0], None, PORT)
    assert ReplayVerifier(tree=tree_file).verify(TASKS[0], port) == \
        ReplayVerifier(tree=recorded).verify(TASKS[0], port)
    assert record_tree(TASKS, coder, DigestVerifier(), tree_file, depth=1).judged == 0


# ---------------------------------------------------------------------------------------------------
# the noise report, on hand-written rows


def retime(task: str, digest: str, ms: float | None, status: str = "ok", device: str = "fake gpu") -> dict:
    return {"kind": "retime", "format": FORMAT, "task": task, "task_sha": "sha", "digest": digest,
            "status": status, "candidate_ms": ms, "candidate_median_ms": ms, "device": device,
            "verifier_version": "fake", "wall_s": 1.0}


def chain(task: str) -> list[dict]:
    """port P 2 ms -> A 1 ms -> D 0.5 ms, and P -> B incorrect: top 2 is D, then A."""
    return [node(task, "P", None, "port", 0, 2.0), node(task, "A", "P", "num_warps 8", 1, 1.0),
            node(task, "B", "P", "vectorize", 1, None, status="incorrect"),
            node(task, "D", "A", "tile BLOCK=1024", 2, 0.5)]


def test_spreads_share_median_and_max_by_hand(tmp_path):
    rows = [*chain("t"), retime("t", "D", 0.52), retime("t", "D", 0.49),  # D: 0.52 / 0.49 = 1.0612
            retime("t", "A", 1.01), retime("t", "A", 0.99),  # A: 1.01 / 0.99 = 1.0202
            retime("t", "P", 4.0),  # P is not in the top 2: not counted
            *chain("u"), retime("u", "D", 0.51),  # D: 0.51 / 0.5 = 1.02
            retime("u", "D", 0.9, device="other gpu"),  # another device: left out, counted
            retime("u", "A", None, status="incorrect"),  # no time: A has no spread, one failed
            *chain("v"),  # never re-timed: not among the re-timed tasks
            *chain("w"), retime("w", "D", 0.5), retime("w", "A", 1.0)]  # spread 1.0
    tree = load_tree(write_rows(tmp_path / "t.jsonl", rows))
    tasks = [tiny_task(name) for name in "tuvw"]
    report = noise_report(tree, tasks, top=2)
    t, u, v, w = report["tasks"]
    assert [p["digest"] for p in t["programs"]] == ["D", "A"]
    assert t["spread"] == pytest.approx(0.52 / 0.49)
    assert t["programs"][1]["spread"] == pytest.approx(1.01 / 0.99)
    assert u["spread"] == pytest.approx(1.02) and u["retimed_programs"] == 1
    assert (u["programs"][0]["other_device"], u["programs"][1]["failed"]) == (1, 1)
    assert v["spread"] is None and w["spread"] == 1.0
    summary = report["summary"]
    assert (summary["tasks"], summary["retimed_tasks"], summary["within_limit"]) == (4, 3, 2)
    assert summary["share_within_limit"] == pytest.approx(2 / 3)
    assert summary["median_spread"] == pytest.approx(1.02)
    assert summary["max_spread"] == pytest.approx(0.52 / 0.49)
    markdown = noise_markdown(report)
    assert "- spread <= 1.05: 2 (66.7%)" in markdown and "| t | 2 of 2 | 1.0612 | D | 0 | 0 |" in markdown
    assert "| v | 0 of 2 | n/a | - | 0 | 0 |" in markdown


def test_judge_batch_retimes_in_trusted_batches_of_chunk_and_stops_at_the_time_limit(tree_file):
    from tests.tree.fakes import BatchVerifier

    verifier = BatchVerifier()
    summary = retime_tree(TASKS, coder, verifier, tree_file, top=3, repeats=2, judge="batch", chunk=4)
    assert sorted(verifier.batch_sizes) == [2, 2, 4, 4]  # each task's 6 verdicts, in runs of 4
    top = {(t.name, d) for t in TASKS for d in fastest(tree_file, t.name, 3)}
    assert retimes(tree_file) == {pair: 2 for pair in top} and summary.judged == 12
    late = BatchVerifier()
    more = retime_tree(TASKS, coder, late, tree_file, top=3, repeats=3, judge="batch", time_limit_s=0)
    assert late.batch_sizes == [] and more.judged == 0  # past the limit no batch starts


def test_a_retime_judge_must_be_each_or_batch(tree_file):
    with pytest.raises(ValueError, match="each or batch"):
        retime_tree(TASKS, coder, DigestVerifier(), tree_file, judge="both")
