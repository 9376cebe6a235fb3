"""benchmarks/roofline_audit.py: every fraction listed; a task above its roofline fails the audit."""

import json
from pathlib import Path

import pytest

from benchmarks import roofline_audit


def bench_folder(path: Path, task: str, candidate_ms: float, floor_ms: float) -> Path:
    """A one-task bench folder whose bench floor and verdict roofline are both `floor_ms`."""
    row = {"task": task, "status": "ok", "correct": True, "bound": "memory", "candidate_ms": candidate_ms,
           "floor_ms": floor_ms}
    (path / task).mkdir(parents=True)
    (path / "results.json").write_text(json.dumps({"tasks": [row]}))
    verdict = {"status": "ok", "candidate_ms": candidate_ms, "roofline_ms": floor_ms}
    (path / task / "result.json").write_text(json.dumps({"verdict": verdict}))
    return path


def test_a_clean_folder_passes_and_lists_its_fraction(tmp_path, capsys):
    clean = bench_folder(tmp_path / "clean", "relu", candidate_ms=2.0, floor_ms=1.0)
    assert roofline_audit.main(["--no-manifest", str(clean)]) == 0
    out = capsys.readouterr().out
    assert "| relu | ok | memory | 2.0000 | 1.0000 | 50.00% | 1.0000 | 50.00% |" in out
    assert "50.00% (relu, " in out and "Above 1.0" not in out


def test_a_task_above_its_roofline_fails_and_is_named(tmp_path, capsys):
    clean = bench_folder(tmp_path / "clean", "relu", candidate_ms=2.0, floor_ms=1.0)
    over = bench_folder(tmp_path / "over", "amax", candidate_ms=1.0, floor_ms=1.05)
    assert roofline_audit.main(["--no-manifest", str(clean), str(over)]) == 1
    out = capsys.readouterr().out
    assert "2 bench folders, 2 task verdicts checked." in out
    assert "### Above 1.0 (2)" in out  # against the bench floor and the verifier's roofline
    for roofline in ("bench", "verifier"):
        assert f"| {roofline} | {over} | amax | ok | memory | 1.0000 | 1.0500 | 105.00% |" in out


def test_an_ok_task_with_no_roofline_is_counted_not_listed(tmp_path, capsys):
    folder = bench_folder(tmp_path / "uncalibrated", "relu", candidate_ms=2.0, floor_ms=1.0)
    (folder / "relu" / "result.json").unlink()  # a combined folder holds no task folders
    row = {"task": "relu", "status": "ok", "correct": True, "bound": None, "candidate_ms": 2.0,
           "floor_ms": None}
    (folder / "results.json").write_text(json.dumps({"tasks": [row]}))
    assert roofline_audit.main(["--no-manifest", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "| relu |" not in out
    assert out.count("| 0 | 1 | n/a | 0 |") == 2  # no fraction, one ok verdict without, none above


def test_recompute_reads_an_archived_row_against_todays_floor(tmp_path, capsys):
    """A row whose stored floor (the measured copy rate's) reads above 1.0 but today's (the datasheet's
    memory rate) does not: --recompute passes it; a task that does not load is listed, not dropped."""
    from mtmc.bench.roofline import floor_ms, load_calibrations, pick
    from mtmc.tasks import load_task, summarize

    task = load_task("softmax_lastdim")
    summary = summarize(task)
    gpu = "NVIDIA H100 80GB HBM3"
    new, _ = floor_ms(summary, task, pick(load_calibrations("auto"), gpu))
    old, candidate = 1.2 * new, 1.1 * new  # the old floor was slower than the datasheet's
    folder = bench_folder(tmp_path / "old", "softmax_lastdim", candidate_ms=candidate, floor_ms=old)
    results = json.loads((folder / "results.json").read_text())
    results["meta"] = {"suite": "builtin"}
    results["tasks"][0] |= {"device": gpu, "bytes": summary.bytes_min}
    # a task since removed from the built-ins, under its floor as stored; no result.json: no verdict
    results["tasks"].append({**results["tasks"][0], "task": "gone_task", "floor_ms": 0.5 * candidate})
    (folder / "results.json").write_text(json.dumps(results))

    assert roofline_audit.main(["--no-manifest", "--recompute", str(folder)]) == 0
    out = capsys.readouterr().out
    stored, today = out.split("## Roofline audit at today's floors")
    assert "### Above 1.0 (2)" in stored  # bench and verifier, as stored: 1.2 / 1.1
    assert "Above 1.0" not in today
    assert "2 timed tasks, 3 timed fractions" in today
    assert "2 recomputed, 1 not recomputed (listed below)" in today
    assert f"| bench now | {folder} | gone_task | ok | {candidate:.4f} | loading or summarizing gone_task " \
           "failed: TaskError: gone_task: not a task file and not a built-in task" in today
    assert f"{100 / 1.1:.2f}% (softmax_lastdim, {folder})" in today

    results["tasks"][0]["candidate_ms"] = 0.9 * new  # faster than today's floor too: the audit fails
    (folder / "results.json").write_text(json.dumps(results))
    assert roofline_audit.main(["--no-manifest", "--recompute", str(folder)]) == 1
    today = capsys.readouterr().out.split("## Roofline audit at today's floors")[1]
    over = f"| bench now | {folder} | softmax_lastdim | ok | memory | {0.9 * new:.4f} | {new:.4f} | 111.11% |"
    assert "### Above 1.0 (1)" in today and over in today  # the verdict (result.json) keeps its time


def test_a_bench_folder_after_tasks_is_refused_not_skipped(tmp_path, capsys):
    folder = bench_folder(tmp_path / "run", "relu", candidate_ms=2.0, floor_ms=1.0)
    with pytest.raises(SystemExit):
        roofline_audit.main(["--no-manifest", "--recompute", "--tasks", str(folder)])
    assert "bench folders go before --tasks" in capsys.readouterr().err
