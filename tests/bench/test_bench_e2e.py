"""`mtmc bench` end to end on the CPU with the defaults (heuristic planner, template coder, Triton
interpreter) on a folder of three KernelBench-format tasks (tests/bench/suite/): correctness only.

Run: python -m pytest tests/bench/test_bench_e2e.py -v
"""

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import torch

from mtmc.tasks import load_suite

SUITE = Path(__file__).parent / "suite"
ALLOWED_IMPORTS = {"math", "torch", "triton"}  # what a standalone KernelBench ModelNew file may need


def mtmc(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mtmc.cli", *args], capture_output=True, text=True,
                          timeout=600)


def test_bench_a_kernelbench_folder_then_resume_it(tmp_path):
    out = tmp_path / "bench"
    args = ("bench", f"suite={SUITE}", "max_steps=2", "verifier=interpreter", f"out={out}")
    done = mtmc(*args)
    assert done.returncode == 0, done.stderr[-3000:]
    tasks = load_suite(SUITE)
    assert len(tasks) == 3

    results = json.loads((out / "results.json").read_text())
    assert [r["task"] for r in results["tasks"]] == [t.name for t in tasks]
    agg = results["aggregates"]
    assert (agg["tasks"], agg["correct"], agg["correct_rate"], agg["timed"]) == (3, 3, 1.0, False)
    # the interpreter times nothing: every timing metric is None, never a made-up 0
    assert set(agg["fast_p"]["eager"].values()) == {None} and agg["geomean_speedup_compiled"] is None
    for row in results["tasks"]:
        assert row["status"] == "ok" and row["verifier_calls"] >= 1 and row["steps"] == 2
        assert row["roofline_pct"] is None and row["device"] == "cpu (triton interpreter)"
    markdown = (out / "results.md").read_text()
    assert "| 1.0 | n/a | n/a |" in markdown and "No timings" in markdown
    assert (out / "results.csv").read_text().count("\n") == 4
    for name in ("speedup.png", "fast_p.png", "bench_config.json"):
        assert (out / name).is_file()
    assert done.stderr.count("steps") >= 3  # a progress line per task

    for task in tasks:
        assert_standalone_model_new(out / task.name / "kernel.py", task)

    # Again into the same folder: every task is finished, nothing is re-run or rewritten.
    task_files = [p for t in tasks for p in (out / t.name).iterdir()]
    stamps = {p: p.stat().st_mtime_ns for p in task_files}
    again = mtmc(*args)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "3 finished earlier (skipped), 0 to run" in again.stderr
    assert stamps == {p: p.stat().st_mtime_ns for t in tasks for p in (out / t.name).iterdir()}
    assert json.loads((out / "results.json").read_text())["tasks"] == results["tasks"]


def assert_standalone_model_new(path: Path, task) -> None:
    """What KernelBench does with a kernel file: import it on its own, build ModelNew, compare."""
    tree = ast.parse(path.read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported <= ALLOWED_IMPORTS, f"{path}: imports {imported - ALLOWED_IMPORTS}"
    assert any(isinstance(node, ast.ClassDef) and node.name == "ModelNew" for node in tree.body)

    spec = importlib.util.spec_from_file_location(f"kernelbench_{task.name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert issubclass(module.ModelNew, torch.nn.Module)
    model_new = module.ModelNew(*task.init_inputs())
    inputs = task.make_inputs(seed=1)
    with torch.no_grad():
        torch.testing.assert_close(model_new(*inputs), task.make_model(seed=0)(*inputs), rtol=1e-4, atol=1e-5)


RELU_SCALE = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2.0


def get_inputs():
    return [torch.randn(3, 7)]


def get_init_inputs():
    return []
"""


def test_a_broken_file_is_an_error_row_and_the_rest_runs(tmp_path):
    suite, out = tmp_path / "suite", tmp_path / "bench"
    suite.mkdir()
    (suite / "a_broken.py").write_text("def oops(:\n")
    (suite / "relu_scale.py").write_text(RELU_SCALE)
    args = ("bench", f"suite={suite}", "max_steps=1", "verifier=interpreter", f"out={out}")
    leaving_it_out = mtmc(*args, "tasks=[relu_scale]")
    assert leaving_it_out.returncode == 0, leaving_it_out.stderr[-3000:]
    assert [r["task"] for r in json.loads((out / "results.json").read_text())["tasks"]] == ["relu_scale"]

    done = mtmc(*args)  # the whole folder: relu_scale is finished, the broken file becomes a row
    assert done.returncode == 0, done.stderr[-3000:]
    message = f"{suite / 'a_broken.py'}: syntax error at line 1: invalid syntax"
    assert f"an error row: {message}" in done.stdout + done.stderr
    rows = json.loads((out / "results.json").read_text())["tasks"]
    assert [(r["task"], r["status"], r["error"]) for r in rows] == [("a_broken", "error", message),
                                                                    ("relu_scale", "ok", None)]
