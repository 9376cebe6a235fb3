"""The headroom report: oracle@k and planners on hand-written trees with known times, per split."""

from __future__ import annotations

import json
import math

import pytest

from mtmc.tree import load_tree, task_fingerprint
from mtmc.tree.report import headroom, oracle, plot_anytime, report_markdown
from planners.greedy import GreedyPlanner
from planners.random import RandomPlanner
from tests.scripted_planner import ScriptedPlanner
from tests.tree.fakes import edge, expanded, node, tiny_task, write_rows

TASKS = [tiny_task("t", split="train"), tiny_task("u", scale=3, split="eval")]


def rows(sha=lambda name: "sha"):
    """t: port P 2 ms -> A 1 ms -> D 0.5 ms (depth 2); P -> B incorrect, C 3 ms (slower).
    u: port Q 1 ms -> E 0.8 ms, a leaf."""
    return [node("t", "P", None, "port", 0, 2.0, split_sha=sha("t")),
            node("t", "A", "P", "num_warps 8", 1, 1.0, rank=0, split_sha=sha("t")),
            node("t", "B", "P", "vectorize", 1, None, rank=1, status="incorrect", split_sha=sha("t")),
            node("t", "C", "P", "num_warps 2", 1, 3.0, rank=2, split_sha=sha("t")),
            expanded("t", "P", 3),
            edge("t", "A", "num_warps 2", "C", 2, rank=0),
            node("t", "D", "A", "tile BLOCK=1024", 2, 0.5, rank=1, split_sha=sha("t")),
            expanded("t", "A", 2),
            node("u", "Q", None, "port", 0, 1.0, split_sha=sha("u")),
            node("u", "E", "Q", "num_warps 8", 1, 0.8, split_sha=sha("u")),
            expanded("u", "Q", 1)]


@pytest.fixture
def tree(tmp_path):
    return load_tree(write_rows(tmp_path / "t.jsonl", rows()))


def test_oracle_at_k_is_the_fastest_ok_program_within_k_steps(tree):
    assert oracle(tree, "t", 0) == {"final_ms": 2.0, "calls": 1, "steps": 0, "stop_reason": None,
                                    "trace": [(1, 2.0)]}
    assert (oracle(tree, "t", 1)["final_ms"], oracle(tree, "t", 1)["calls"]) == (1.0, 4)  # B failed
    assert (oracle(tree, "t", 2)["final_ms"], oracle(tree, "t", 2)["calls"]) == (0.5, 5)
    assert oracle(tree, "u", 2)["final_ms"] == 0.8


def test_cells_per_split_speedup_share_of_oracle_and_calls(tree):
    planners = {"greedy": [GreedyPlanner()], "port_only": [ScriptedPlanner(["port"])]}
    report = headroom(tree, TASKS, planners, max_steps=4)
    assert report["methods"] == ["oracle@1", "oracle@2", "greedy", "port_only"]
    train, eval_, both = (report["splits"][s] for s in ("train", "eval", "all"))
    assert train["oracle@1"]["geomean_speedup"] == pytest.approx(2.0)
    assert train["oracle@1"]["pct_of_oracle"] == pytest.approx(50.0)
    assert train["oracle@1"]["calls_per_task"] == 4
    assert train["oracle@2"]["pct_of_oracle"] == pytest.approx(100.0)
    # greedy: port, num_warps 8 (A), num_warps 2 (C, slower: rejected), tile BLOCK=1024 (D)
    assert train["greedy"]["geomean_speedup"] == pytest.approx(4.0) and train["greedy"]["calls_per_task"] == 4
    assert eval_["greedy"]["geomean_speedup"] == pytest.approx(1.25)
    assert eval_["greedy"]["calls_per_task"] == 2
    assert both["greedy"]["geomean_speedup"] == pytest.approx(math.sqrt(5.0))
    assert both["port_only"]["geomean_speedup"] == pytest.approx(1.0)
    assert both["port_only"]["pct_of_oracle"] == pytest.approx(100 * math.sqrt(0.25 * 0.8))
    assert both["port_only"]["calls_per_task"] == 1 and both["greedy"]["tasks"] == 2


def test_anytime_curves_are_the_best_speedup_so_far_against_calls(tree, tmp_path):
    report = headroom(tree, TASKS, {"greedy": [GreedyPlanner()]}, max_steps=4)
    mid, end = math.sqrt(2.0 * 1.25), math.sqrt(4.0 * 1.25)
    # greedy: t after 1, 2, 3, 4 calls: P, A, A (C rejected), D; u: Q, E
    assert report["anytime"]["greedy"] == pytest.approx([1.0, mid, mid, end])
    # the oracle judges t's programs breadth-first: P, A, B (failed), C (slower), D
    assert report["anytime"]["oracle@2"] == pytest.approx([1.0, mid, mid, mid, end])
    plot_anytime(tmp_path / "anytime.png", report)
    assert (tmp_path / "anytime.png").stat().st_size > 0


def test_seeded_planners_run_once_per_seed_and_never_beat_the_oracle(tree):
    report = headroom(tree, TASKS, {"random": [RandomPlanner(seed=s) for s in range(5)]}, max_steps=4)
    cell = report["splits"]["all"]["random"]
    assert cell["runs_per_task"] == 5 and len(report["tasks"][0]["runs"]["random"]) == 5
    assert 1.0 <= cell["geomean_speedup"] <= math.sqrt(4.0 * 1.25) and cell["pct_of_oracle"] <= 100.0
    markdown = report_markdown(report)
    assert "| all | random | 2 (2) |" in markdown and "| t | train | 2.0000 |" in markdown
    assert "No timings" not in markdown


def test_a_tree_without_timings_reports_na_not_one(tmp_path):
    untimed = [{**r, "candidate_ms": None} if r["kind"] == "node" else r for r in rows()]
    tree = load_tree(write_rows(tmp_path / "t.jsonl", untimed))
    report = headroom(tree, TASKS, {"greedy": [GreedyPlanner()]}, max_steps=4)
    cell = report["splits"]["all"]["greedy"]
    # without times every correct step is accepted: on t greedy ends on C (port, A, C), on u on E
    assert cell["geomean_speedup"] is None and cell["timed_tasks"] == 0 and cell["calls_per_task"] == 2.5
    markdown = report_markdown(report)
    assert "| all | greedy | 2 (0) | n/a | n/a | 2.5 |" in markdown and "No timings" in markdown


def test_mtmc_tree_report_job_on_a_folder(tmp_path, capsys):
    from mtmc.jobs.tree import run
    from mtmc.tasks import load_suite
    from tests.test_conf import composed

    suite = tmp_path / "suite"
    suite.mkdir()
    for task in TASKS:
        (suite / f"{task.name}.py").write_text(task.source)
    loaded = {t.name: t for t in load_suite(suite)}
    changed = lambda name: "stale" if name == "u" else task_fingerprint(loaded[name])  # noqa: E731
    path = write_rows(tmp_path / "t.jsonl", rows(changed))
    out = tmp_path / "out"
    cfg = composed("tree", ["action=report", f"tree={path}", f"suite={suite}", "seeds=3", f"out={out}"])
    result = run(cfg)
    assert [r["task"] for r in result["tasks"]] == ["t"] and result["meta"]["changed_tasks"] == ["u"]
    assert result["meta"]["runs"] == {"heuristic": 1, "greedy": 1, "random": 3}
    written = json.loads((out / "tree_report.json").read_text())
    assert written["methods"][-3:] == ["heuristic", "greedy", "random"]
    assert (out / "anytime.png").is_file()
    markdown = (out / "tree_report.md").read_text()
    assert "Left out (the task changed since the recording): u" in markdown
    assert markdown in capsys.readouterr().out
