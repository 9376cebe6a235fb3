"""benchmarks/latest_runs.py: each task at its latest run, read from a small git repository's archive."""

import csv
import json
import os
import subprocess
from pathlib import Path

import pytest

from benchmarks import latest_runs
from benchmarks.manifest import FIELDS

INTERRUPT = "RunStopped: interrupted: stopped at step 0"


def row(task, eager=None, compiled=None, status="ok", error=None):
    """A results.json row; a timed one names its program, as the bench's rows do."""
    return {"task": task, "status": status, "correct": status == "ok", "speedup_eager": eager,
            "speedup_compiled": compiled, "kernel": f"{task}/kernel.py" if eager else None, "error": error}


def write_folder(repo: Path, name: str, rows: list[dict]) -> None:
    folder = repo / "benchmarks" / "results" / name
    for r in rows:
        if r["kernel"]:
            (folder / r["task"]).mkdir(parents=True)
            (folder / r["kernel"]).write_text(f"# {name} {r['task']}\n")
    (folder / "results.json").write_text(json.dumps({"tasks": rows}))


def commit(repo: Path, message: str, when: int) -> str:
    """Commit everything at committer time `when`; the new commit's sha."""
    env = os.environ | {"GIT_AUTHOR_DATE": f"@{when} +0000", "GIT_COMMITTER_DATE": f"@{when} +0000"}
    for args in (["add", "-A"], ["commit", "-q", "-m", message]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)
    return latest_runs.git(repo, "rev-parse", "HEAD").strip()


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> Path:
    """Two runs of one day, the newer listed first in the manifest (folder "a" sorts before "b"), and
    a run of the day before archived in the newest commit: the order must come from date, then commit
    time. Also a folder whose commit git does not know and whose archive is missing."""
    repo = tmp_path_factory.mktemp("repo")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    for key, value in (("user.name", "t"), ("user.email", "t@t"), ("commit.gpgsign", "false")):
        subprocess.run(["git", "config", key, value], cwd=repo, check=True)
    write_folder(repo, "2026-12-01-b", [row("1_Conv2d_ReLU", 2.0, 0.5),
                                        row("2_ConvTranspose2d_Add", 4.0, 2.0),
                                        row("3_Conv3d_Min", 3.0, 0.9)])
    old = commit(repo, "archive the older run", when=1796000000)
    subprocess.run(["git", "rm", "-rq", "benchmarks/results"], cwd=repo, check=True)
    write_folder(repo, "2026-12-01-a", [row("1_Conv2d_ReLU", 8.0, 2.0),
                                        row("3_Conv3d_Min", status="error", error=INTERRUPT),
                                        row("5_Conv1d_Tanh", status="error", error=INTERRUPT),
                                        row("6_Matmul_Sum", 1.5, 1.2)])
    write_folder(repo, "2026-11-30-c", [row("2_ConvTranspose2d_Add", 100.0, 100.0)])
    new = commit(repo, "archive the newer run and the day before's", when=1796003600)
    runs = [("2026-12-01", new, new, "2026-12-01-a"), ("2026-12-01", old, old, "2026-12-01-b"),
            ("2026-12-01", "0badc0de", old, "2026-12-01-gone"), ("2026-11-30", new, new, "2026-11-30-c")]
    with (repo / "benchmarks" / "results.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS, lineterminator="\n")
        writer.writeheader()
        for date, measured, archive, folder in runs:
            writer.writerow(dict.fromkeys(FIELDS, "") | {"date": date, "commit": measured, "suite": ".kb/l2",
                            "where": f"{archive}:benchmarks/results/{folder}"})
    return repo


def test_each_task_keeps_the_row_of_its_latest_run(repo, capsys):
    latest = latest_runs.latest_rows(repo, ".kb/l2")
    folders = {task: item.folder for task, item in latest.items()}
    assert folders == {"1_Conv2d_ReLU": "2026-12-01-a", "2_ConvTranspose2d_Add": "2026-12-01-b",
                       "3_Conv3d_Min": "2026-12-01-b", "5_Conv1d_Tanh": "2026-12-01-a",
                       "6_Matmul_Sum": "2026-12-01-a"}
    assert latest["1_Conv2d_ReLU"].row["speedup_eager"] == 8.0
    assert "commit 0badc0de is not in the repository" in capsys.readouterr().err


def test_an_interrupt_does_not_replace_an_earlier_verdict_but_stands_alone(repo):
    latest = latest_runs.latest_rows(repo, ".kb/l2")
    assert latest["3_Conv3d_Min"].row["correct"] and latest["3_Conv3d_Min"].row["speedup_compiled"] == 0.9
    assert latest_runs.interrupted(latest["5_Conv1d_Tanh"].row)  # no earlier run: the task is not judged


def test_a_folder_missing_from_the_history_is_skipped_with_a_note(repo, capsys):
    latest_runs.latest_rows(repo, ".kb/l2")
    assert "benchmarks/results/2026-12-01-gone: not in the repository's history; skipped" \
        in capsys.readouterr().err


def test_the_family_table(repo):
    latest = latest_runs.selected(latest_runs.latest_rows(repo, ".kb/l2"), None)
    # conv: 1 (8.0x, 2.0x), 3 (3.0x, 0.9x) correct, 5 interrupted; all: with 2 (4.0x, 2.0x), 6 (1.5x, 1.2x)
    assert latest_runs.family_table(latest)[2:] == [
        f"| conv | 3 | 2 | {(8.0 * 3.0) ** 0.5:.2f}x | {(2.0 * 0.9) ** 0.5:.2f}x | 1 |",
        "| conv-transpose | 1 | 1 | 4.00x | 2.00x | 1 |",
        "| other | 1 | 1 | 1.50x | 1.20x | 1 |",
        f"| all | 5 | 4 | {(8.0 * 3.0 * 4.0 * 1.5) ** 0.25:.2f}x "
        f"| {(2.0 * 0.9 * 2.0 * 1.2) ** 0.25:.2f}x | 3 |"]
    assert f"{(8.0 * 3.0 * 4.0 * 1.5) ** 0.25:.2f}" == "3.46"


def test_the_cli_selects_families_and_lists_tasks_worst_first(repo, capsys):
    latest_runs.main(["--suite", ".kb/l2", "--families", "conv,conv-transpose", "--tasks",
                      "--repo", str(repo)])
    out = capsys.readouterr().out
    eager, compiled = (8.0 * 3.0 * 4.0) ** (1 / 3), (2.0 * 0.9 * 2.0) ** (1 / 3)
    assert f"| all | 4 | 3 | {eager:.2f}x | {compiled:.2f}x | 2 |" in out
    tasks = [line.split(" | ")[0][2:] for line in out.splitlines() if line.startswith("| ") and "_" in line]
    assert tasks == ["5_Conv1d_Tanh", "3_Conv3d_Min", "1_Conv2d_ReLU", "2_ConvTranspose2d_Add"]
    assert "| 3_Conv3d_Min | 2026-12-01-b |" in out


def test_export_lays_out_the_latest_programs_as_a_bench_folder(repo, tmp_path, capsys):
    latest = latest_runs.selected(latest_runs.latest_rows(repo, ".kb/l2"), None)
    assert latest_runs.export(repo, latest, tmp_path / "out") == 4
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "1_Conv2d_ReLU", "2_ConvTranspose2d_Add", "3_Conv3d_Min", "6_Matmul_Sum"]
    assert (tmp_path / "out" / "3_Conv3d_Min" / "kernel.py").read_text() == "# 2026-12-01-b 3_Conv3d_Min\n"
    bench = json.loads((tmp_path / "out" / "1_Conv2d_ReLU" / "bench.json").read_text())
    assert bench["row"]["speedup_eager"] == 8.0  # what kb_eval's our_row reads
    assert "5_Conv1d_Tanh: no program at" in capsys.readouterr().err


def test_json_holds_the_latest_rows_and_where_they_are(repo, tmp_path):
    latest_runs.main(["--suite", ".kb/l2", "--json", str(tmp_path / "latest.json"), "--repo", str(repo)])
    data = json.loads((tmp_path / "latest.json").read_text())
    assert data["suite"] == ".kb/l2" and len(data["tasks"]) == 5
    first = data["tasks"][0]
    assert first["task"] == "1_Conv2d_ReLU" and first["where"].endswith(":benchmarks/results/2026-12-01-a")


def test_an_unlisted_cut_off_folder_counts_by_its_task_folders(tmp_path):
    """A run cut off before its report has only <task>/bench.json: --unlisted adds it, in time order."""
    repo = tmp_path
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    for key, value in (("user.name", "t"), ("user.email", "t@t"), ("commit.gpgsign", "false")):
        subprocess.run(["git", "config", key, value], cwd=repo, check=True)
    write_folder(repo, "listed", [row("1_Conv2d_ReLU", 2.0, 0.5), row("2_ConvTranspose2d_Add", 4.0, 2.0)])
    listed = commit(repo, "archive the listed run", when=1796000000)
    cut = repo / "benchmarks" / "results" / "cut" / "1_Conv2d_ReLU"
    cut.mkdir(parents=True)
    (cut / "bench.json").write_text(json.dumps({"row": row("1_Conv2d_ReLU", 3.0, 1.5)}))
    (cut.parent / "bench_config.json").write_text("{}")  # a file, not a task folder
    later = commit(repo, "archive the cut run", when=1796003600)
    with (repo / "benchmarks" / "results.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=FIELDS, lineterminator="\n")
        writer.writeheader()
        day = latest_runs.git(repo, "log", "-1", "--format=%cs", listed).strip()  # the day it was measured
        writer.writerow(dict.fromkeys(FIELDS, "") | {"date": day, "commit": listed, "suite": ".kb/l2",
                        "where": f"{listed}:benchmarks/results/listed"})
    latest = latest_runs.latest_rows(repo, ".kb/l2", [f"{later}:benchmarks/results/cut@{later}"])
    assert {t: i.folder for t, i in latest.items()} == {"1_Conv2d_ReLU": "cut",
                                                         "2_ConvTranspose2d_Add": "listed"}
    assert latest["1_Conv2d_ReLU"].row["speedup_compiled"] == 1.5
    assert set(latest_runs.latest_rows(repo, ".kb/l2")) == {"1_Conv2d_ReLU", "2_ConvTranspose2d_Add"}
    with pytest.raises(SystemExit, match="expected"):
        latest_runs.latest_rows(repo, ".kb/l2", ["no-at-sign"])
