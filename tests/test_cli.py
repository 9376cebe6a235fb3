"""The `mtmc` console script: job dispatch, `mtmc tasks`, and clear errors."""

import json
import subprocess
import sys

import pytest

from mtmc.cli import JOBS, main
from mtmc.tasks import builtin_names


def mtmc(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mtmc.cli", *args], capture_output=True, text=True,
                          timeout=300)


def test_tasks_lists_the_suite_as_json():
    result = mtmc("tasks", "json=true")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert [r["name"] for r in rows] == builtin_names()
    for row in rows:
        assert row["split"] in ("train", "eval") and row["flops"] > 0 and row["bytes"] > 0 and row["ops"]


def test_tasks_table_filters_by_split():
    result = mtmc("tasks", "suite=builtin:eval")
    assert result.returncode == 0, result.stderr
    assert "tasks in builtin:eval" in result.stdout and "train" not in result.stdout.split("FLOP/B")[1]


def test_tasks_bad_folder_is_one_line(tmp_path):
    (tmp_path / "broken.py").write_text("def oops(:\n")
    result = mtmc("tasks", f"suite={tmp_path}")
    assert result.returncode != 0
    broken = tmp_path / "broken.py"
    assert result.stderr.strip() == f"mtmc tasks: {broken}: syntax error at line 1: invalid syntax"


@pytest.mark.parametrize("args, code, text", [((), 2, "usage: mtmc"), (("frobnicate",), 2, "unknown job"),
                                              (("train",), 1, "no data folders given")])
def test_dispatch_errors(args, code, text):
    result = mtmc(*args)
    assert result.returncode == code and text in result.stdout + result.stderr


def test_optimize_refuses_a_folder_that_holds_a_run_and_leaves_it_alone(tmp_path):
    (tmp_path / "checkpoints.sqlite").write_bytes(b"")
    (tmp_path / "config.yaml").write_text("the earlier run's config\n")
    result = mtmc("optimize", "task=softmax_lastdim", f"hydra.run.dir={tmp_path}")
    assert result.returncode != 0
    assert f"already holds a run: continue it with resume={tmp_path}" in result.stderr
    assert (tmp_path / "config.yaml").read_text() == "the earlier run's config\n"


# --- the exit code follows the outcome ------------------------------------------------------------

RELU_SCALE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return {body}


def get_inputs():
    return [torch.randn(3, 5, 5)]


def get_init_inputs():
    return []
"""

TORCH_CANDIDATE = """
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2.0
"""


def write_task(folder, name, body="torch.relu(x) * 2.0"):
    path = folder / f"{name}.py"
    path.write_text(RELU_SCALE.format(body=body))
    return path


def test_verify_exits_non_zero_unless_ok(tmp_path):
    task = write_task(tmp_path, "relu_scale")
    candidate = tmp_path / "candidate.py"
    candidate.write_text(TORCH_CANDIDATE)  # PyTorch compute, no Triton: rejected by the static checks
    result = mtmc("verify", f"task={task}", f"candidate={candidate}", "verifier=interpreter")
    assert result.returncode == 1
    assert '"status": "rejected"' in result.stdout
    assert result.stderr.strip().splitlines()[-1] == "mtmc verify: the verdict is rejected, not ok"


def test_optimize_exits_non_zero_when_nothing_was_accepted(tmp_path):
    task = write_task(tmp_path, "inverse", body="torch.linalg.inv(x)")  # the template coder cannot port it
    run_dir = tmp_path / "run"
    result = mtmc("optimize", f"task={task}", "verifier=interpreter", "max_steps=1", "max_retries=0",
                  f"hydra.run.dir={run_dir}")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines()[-1] == \
        f"mtmc optimize: no program was accepted; see {run_dir / 'report.md'}"


def test_non_tensor_inputs_are_caught_at_load(tmp_path, monkeypatch):
    task = write_task(tmp_path, "listed")
    task.write_text(task.read_text().replace("return [torch.randn(3, 5, 5)]", "return [[1.0, 2.0]]"))
    problem = (f"{task}: get_inputs() returned a list at position 0; each input must be a tensor or a "
               "Python number")
    result = mtmc("verify", f"task={task}", f"candidate={tmp_path / 'candidate.py'}")
    assert result.returncode == 1
    assert result.stderr.strip() == f"mtmc verify: {problem}"
    monkeypatch.chdir(tmp_path)  # optimize too, before any role is built (in this process: quicker)
    with pytest.raises(SystemExit) as stop:
        main(["optimize", f"task={task}", "verifier=interpreter"])
    assert str(stop.value) == f"mtmc optimize: {problem}"


def test_help_lists_every_job_in_one_line():
    result = mtmc("--help")
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    for job in JOBS:
        (line,) = [line for line in lines if line.startswith(f"  {job} ")]
        assert len(line.split()) > 5  # the job's name and what it does
    assert "usage: mtmc {tasks,verify,optimize,bench,train,tree}" in result.stdout


@pytest.mark.parametrize("args, sentence", [
    (("max_steps=-3",), "mtmc optimize: max_steps=-3: must be a whole number, at least 1"),
    (("coder=openai",), "mtmc optimize: coder.model not set: give coder.model=<...>"),
    (("planner=foo",), "mtmc optimize: planner=foo: no such planner; choose one of greedy, heuristic, lm, "
                       "random"),
])
def test_config_mistakes_are_one_sentence_before_anything_starts(tmp_path, args, sentence):
    run_dir = tmp_path / "run"
    result = mtmc("optimize", "task=softmax_lastdim", *args, f"hydra.run.dir={run_dir}")
    assert result.returncode == 1
    assert result.stderr.strip() == sentence
    assert not run_dir.exists()  # refused before Hydra made the run folder


@pytest.mark.parametrize("mistake, sentence", [
    ("max_steps=-3", "mtmc optimize: max_steps=-3: must be a whole number, at least 1"),
    ("coder=openai", "mtmc optimize: coder.model not set: give coder.model=<...>"),
])
def test_a_sweep_checks_each_jobs_config_too(tmp_path, monkeypatch, mistake, sentence):
    """`-m` leaves the checks made before Hydra starts to each job of the sweep: the same sentence
    (in this process, as SystemExit: quicker than a subprocess)."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main(["optimize", "-m", "task=softmax_lastdim", mistake])
    assert str(stop.value) == sentence
