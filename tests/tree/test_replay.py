"""The replay verifier: recorded verdicts back as they were, `unrecorded` (never ok) for anything
else, counted by the bench; a replayed bench equals the live one within the recorded depth; a real
tree recorded with the interpreter replays to the live verifier's statuses."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from coders.template import TemplateCoder
from mtmc.bench import run_bench
from mtmc.bench.metrics import aggregate
from mtmc.bench.results import results_markdown
from mtmc.budgets import Budgets
from mtmc.program import Program
from mtmc.strategies import PORT
from mtmc.tree import ReplayVerifier, load_tree, record_tree, task_fingerprint
from mtmc.verify import InterpreterVerifier
from mtmc.verify.verdict import Status
from tests.tree.fakes import TASK_SOURCE, DigestVerifier, node, tiny_task, write_rows

coder = TemplateCoder()
REWARD = {"_target_": "mtmc.reward.RewardConfig"}


def test_a_recorded_program_gets_its_verdict_and_anything_else_is_unrecorded(tmp_path):
    task = tiny_task()
    port = coder.apply(task, None, PORT)
    row = node(task.name, port.digest, None, "port", 0, 0.75, status="ok", split_sha=task_fingerprint(task))
    verifier = ReplayVerifier(tree=write_rows(tmp_path / "t.jsonl", [row]))
    verdict = verifier.verify(task, port)
    assert verdict.ok and verdict.candidate_ms == 0.75 and verdict.eager_ms == 4.0
    assert verdict.device == "fake gpu" and verdict.roofline_ms == 0.1
    other = verifier.verify(task, Program("class ModelNew: pass"))
    changed = verifier.verify(tiny_task(scale=5), port)  # same name, another source
    absent = verifier.verify(tiny_task("not_recorded"), port)
    assert [v.status for v in (other, changed, absent)] == [Status.UNRECORDED] * 3
    assert "not in the tree" in other.message and "changed since" in changed.message
    assert "holds no program" in absent.message
    assert not other.ok and other.device == "fake gpu"
    assert verifier.unrecorded == {task.name: 2, "not_recorded": 1}


def test_no_tree_file_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="needs a tree file"):
        ReplayVerifier(tree=None)
    with pytest.raises(FileNotFoundError, match="mtmc tree record"):
        ReplayVerifier(tree=tmp_path / "absent.jsonl")


def bench(tasks, out, verifier, planner="planners.heuristic.HeuristicPlanner", max_steps=3):
    roles = {"planner": {"_target_": planner}, "coder": {"_target_": "coders.template.TemplateCoder"},
             "verifier": verifier}
    budgets = Budgets(max_steps=max_steps, max_retries=1, time_limit_s=600.0)
    return run_bench(tasks, out, roles=roles, budgets=budgets, reward=REWARD)


KEYS = ("status", "candidate_ms", "port_ms", "steps", "accepted_steps", "attempts", "verifier_calls",
        "verified", "stop_reason", "return")


def test_a_replayed_bench_equals_the_live_one_within_the_recorded_depth(tmp_path):
    tasks = [tiny_task()]
    path = tmp_path / "t.jsonl"
    record_tree(tasks, coder, DigestVerifier(), path, depth=2)
    live = bench(tasks, tmp_path / "live", {"_target_": "tests.tree.fakes.DigestVerifier"})
    replay = bench(tasks, tmp_path / "replay", {"_target_": "mtmc.tree.ReplayVerifier", "tree": str(path)})
    assert [{k: r[k] for k in KEYS} for r in replay] == [{k: r[k] for k in KEYS} for r in live]
    assert all(r["unrecorded"] == 0 and r["steps"] >= 2 for r in replay)


def test_steps_beyond_the_tree_are_counted_unrecorded(tmp_path):
    task = tiny_task()
    path = tmp_path / "t.jsonl"
    record_tree([task], coder, DigestVerifier(), path, depth=0)  # the port alone
    rows = bench([task], tmp_path / "b", {"_target_": "mtmc.tree.ReplayVerifier", "tree": str(path)})
    (row,) = rows
    # every step after the port (and its retry) is unrecorded: never ok, so never accepted
    assert row["unrecorded"] == row["verifier_calls"] - 1 >= 2
    assert row["correct"] and row["accepted_steps"] == 1
    agg = aggregate(rows)
    assert agg["unrecorded"] == row["unrecorded"]
    meta = {"suite": "t", "planner": "p", "coder": "c", "verifier": "mtmc.tree.ReplayVerifier"}
    markdown = results_markdown(rows, agg, meta)
    assert f"| unrecorded verdicts (verifier=replay) | {row['unrecorded']} |" in markdown
    assert f"{row['unrecorded']} verdicts were `unrecorded`" in markdown


@pytest.mark.slow  # a subprocess: ~10 s of imports alone on two cores
def test_mtmc_bench_verifier_replay_from_the_command_line(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "relu_scale.py").write_text(TASK_SOURCE.format(scale=2, split="eval"))
    from mtmc.tasks import load_suite

    path = tmp_path / "t.jsonl"
    record_tree(load_suite(suite), coder, DigestVerifier(), path, depth=1)
    out = tmp_path / "bench"
    done = subprocess.run([sys.executable, "-m", "mtmc.cli", "bench", f"suite={suite}", "verifier=replay",
                           f"tree={path}", "max_steps=2", f"out={out}"], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((out / "results.json").read_text())
    assert results["meta"]["verifier"] == "mtmc.tree.ReplayVerifier"
    assert results["aggregates"]["unrecorded"] == 0 and results["aggregates"]["timed"]
    assert "| unrecorded verdicts (verifier=replay) | 0 |" in (out / "results.md").read_text()


def check_replay_matches_live(tmp_path, depth):
    task = tiny_task()
    path = tmp_path / "t.jsonl"
    with InterpreterVerifier(seeds=1) as live:
        record_tree([task], coder, live, path, depth=depth)
        tree = load_tree(path)
        replay = ReplayVerifier(tree=path)
        programs = [coder.apply(task, None, PORT)]
        if depth:
            programs += [coder.apply(task, programs[0], s)
                         for s in coder.legal_strategies(task, programs[0]) if not s.is_stop]
        assert len(tree.task_nodes(task.name)) == len({p.digest for p in programs})
        for program in programs:
            assert replay.verify(task, program).status == live.verify(task, program).status
    assert replay.unrecorded == {}


def test_a_real_port_recorded_with_the_interpreter_replays_to_the_live_status(tmp_path):
    check_replay_matches_live(tmp_path, depth=0)


@pytest.mark.slow
def test_a_real_depth_one_tree_recorded_with_the_interpreter_replays_to_the_live_statuses(tmp_path):
    check_replay_matches_live(tmp_path, depth=1)
