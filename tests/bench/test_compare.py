"""`mtmc bench compare=A,B[,C...]`: scripted benchmark folders side by side, in process and by the CLI.

Run: python -m pytest tests/bench/test_compare.py -v
"""

import json
import subprocess
import sys

import pytest
from rich.console import Console

from mtmc.bench import compare_runs, run_bench, write_report
from tests.bench.fakes import BUDGETS, REWARD, scripted_roles, tiny_tasks


def scripted_run(out, names, tile):
    with open(out.parent / f"{out.name}.console.txt", "w") as f:
        rows = run_bench(tiny_tasks(*names), out, roles=scripted_roles(tile=tile), budgets=BUDGETS,
                         reward=REWARD, console=Console(file=f))
    write_report(out, rows, {"suite": "fake", "planner": f"scripted ({tile})", "coder": "scripted",
                             "verifier": "fake"})


def test_compare_aggregates_over_the_common_tasks(tmp_path):
    run_a, run_b, out = tmp_path / "a", tmp_path / "b", tmp_path / "cmp"
    scripted_run(run_a, ["a", "b", "c"], tile="ok@0.5")  # A keeps the 0.5 ms tile step
    scripted_run(run_b, ["a", "b", "d"], tile="incorrect")  # B's tile step fails: it stays at 1.0 ms
    result = compare_runs(run_a, run_b, out_dir=out)

    assert result["common"] == ["a", "b"] and result["not_in_all"] == {"A": ["c"], "B": ["d"]}
    agg_a, agg_b = result["aggregates"]["A"], result["aggregates"]["B"]
    assert agg_a["tasks"] == agg_b["tasks"] == 2
    # over eager, A: a 4.0x, b 1.6x; B: a 2.0x, b 0.8x
    assert agg_a["fast_p"]["eager"]["1.0"] == 1.0 and agg_b["fast_p"]["eager"]["1.0"] == 0.5
    markdown = (out / "compare.md").read_text()
    assert "Aggregates over the 2 tasks both runs hold (only in A: c; only in B: d)." in markdown
    assert "| fast_1.0 over eager | 100.0% | 50.0% |" in markdown
    assert "| a | yes | yes | 4.00x | 2.00x |" in markdown
    assert json.loads((out / "compare.json").read_text())["common"] == ["a", "b"]
    assert (out / "compare.png").stat().st_size > 1000

    # The CLI, with the `compare=<run1>,<run2>` spelling Hydra alone would reject as a sweep.
    cli_out = tmp_path / "cli"
    done = subprocess.run([sys.executable, "-m", "mtmc.cli", "bench", f"compare={run_a},{run_b}",
                           f"out={cli_out}"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (cli_out / "compare.md").read_text() == markdown
    assert "| fast_1.0 over eager | 100.0% | 50.0% |" in done.stdout


def test_compare_of_a_folder_without_results_says_so(tmp_path):
    with pytest.raises(FileNotFoundError, match="no results.json"):
        compare_runs(tmp_path, tmp_path)


def test_three_runs_side_by_side_over_the_tasks_all_hold(tmp_path):
    scripted_run(tmp_path / "a", ["a", "b", "c"], tile="ok@0.5")
    scripted_run(tmp_path / "b", ["a", "b", "c"], tile="incorrect")
    scripted_run(tmp_path / "c", ["a", "b"], tile="ok@0.25")  # the fastest, and it lacks task c
    result = compare_runs(tmp_path / "a", tmp_path / "b", tmp_path / "c", out_dir=tmp_path / "cmp")

    assert list(result["runs"]) == ["A", "B", "C"] and result["common"] == ["a", "b"]
    assert result["not_in_all"] == {"A": ["c"], "B": ["c"], "C": []}
    speedups = [result["aggregates"][label]["geomean_speedup_eager"] for label in "ABC"]
    assert speedups[1] < speedups[0] < speedups[2]
    markdown = (tmp_path / "cmp" / "compare.md").read_text()
    assert "Aggregates over the 2 tasks all 3 runs hold (A also has: c; B also has: c)." in markdown
    assert "| metric | A | B | C |" in markdown
    assert "| task | correct A | correct B | correct C | x eager A | x eager B | x eager C |" in markdown
    assert (tmp_path / "cmp" / "compare.png").stat().st_size > 1000


def test_compare_needs_two_folders(tmp_path):
    scripted_run(tmp_path / "a", ["a"], tile="ok@0.5")
    with pytest.raises(ValueError, match="2 to 26 benchmark folders, got 1"):
        compare_runs(tmp_path / "a")
    done = subprocess.run([sys.executable, "-m", "mtmc.cli", "bench", f"compare=[{tmp_path / 'a'}]",
                           f"out={tmp_path / 'cli'}"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    assert "mtmc bench: compare takes 2 to 26 benchmark folders, got 1" in done.stderr


def test_same_programs_in_two_runs_are_matched_by_digest_and_their_time_ratios_reported(tmp_path):
    run_a, run_b = tmp_path / "a", tmp_path / "b"
    scripted_run(run_a, ["a", "b"], tile="ok@0.5")
    scripted_run(run_b, ["a", "b"], tile="ok@0.5")
    first = compare_runs(run_a, run_b)
    agg = first["aggregates"]["A"]  # rows carry their verdicts ok and wall-clock start and finish
    assert agg["verified"] == 4 and agg["elapsed_s"] > 0 and agg["verified_per_min"] > 0
    agreement = first["timing_agreement"]["B"]
    # port and tile step of two tasks: four programs, the same digests and the same fake times
    assert agreement["candidates"] == {"pairs": 4, "median_deviation": 1.0, "worst_ratio": 1.0,
                                       "worst_task": "a"}
    assert agreement["baselines"]["pairs"] == 4  # eager and torch.compile of each task

    # B's tile step of task b timed 10% slower: the worst pair says so, the median does not move
    path = run_b / "b" / "trajectory.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    for record in records:
        if record["step"] == 1 and record["verdict"]:
            record["verdict"]["candidate_ms"] *= 1.1
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = compare_runs(run_a, run_b)
    candidates = result["timing_agreement"]["B"]["candidates"]
    assert candidates["worst_task"] == "b" and candidates["worst_ratio"] == pytest.approx(1.1)
    assert candidates["median_deviation"] == pytest.approx(1.0)
    assert "- candidates: 4 pairs, median 1.000x, worst 1.100x (b)" in result["markdown"]


def test_runs_with_different_programs_have_no_timing_agreement(tmp_path):
    scripted_run(tmp_path / "a", ["a"], tile="ok@0.5")
    scripted_run(tmp_path / "b", ["a"], tile="incorrect")  # B's tile step fails; its port still matches A's
    agreement = compare_runs(tmp_path / "a", tmp_path / "b")["timing_agreement"]["B"]
    assert agreement["candidates"]["pairs"] == 1
