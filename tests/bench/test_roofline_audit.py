"""benchmarks/roofline_audit.py: every fraction listed; a task above its roofline fails the audit."""

import json
from pathlib import Path

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
