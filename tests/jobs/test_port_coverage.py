"""`mtmc tasks check=port`: a row per task file (ported, unsupported or broken), JSON, summary, exit code."""

import json
import subprocess
import sys
import textwrap

import pytest

from mtmc.jobs.port_coverage import coverage_report, port_row, reason_group
from mtmc.program import Program
from mtmc.strategies import PORT
from mtmc.tasks import load_task, scan_suite

TASK = """
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


@pytest.fixture
def suite(tmp_path):
    """One task that ports, one the template coder does not support, one broken file."""
    (tmp_path / "relu_scale.py").write_text(textwrap.dedent(TASK.format(body="torch.relu(x) * 2.0")))
    (tmp_path / "inverse.py").write_text(textwrap.dedent(TASK.format(body="torch.linalg.inv(x)")))
    (tmp_path / "broken.py").write_text("def oops(:\n")
    return tmp_path


def mtmc(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mtmc.cli", *args], capture_output=True, text=True,
                          timeout=300)


def test_rows_say_ported_unsupported_and_broken(suite):
    rows = {row["task"]: row for row in map(port_row, scan_suite(suite))}
    assert rows["relu_scale"] | {"seconds": 0} == {
        "task": "relu_scale", "path": str(suite / "relu_scale.py"), "port": "ok", "reason": "", "group": "",
        "kernels": 1, "library": False, "seconds": 0}
    assert rows["inverse"]["port"] == "failed" and rows["inverse"]["kernels"] is None
    assert rows["inverse"]["reason"] == "CoderError: op linalg_inv"
    assert rows["broken"]["port"] == "failed"
    broken = suite / "broken.py"
    assert rows["broken"]["reason"] == f"TaskError: {broken}: syntax error at line 1: invalid syntax"
    assert rows["broken"]["group"] == "TaskError: syntax error at line N: invalid syntax"


def test_a_kept_library_call_is_reported(monkeypatch):
    from coders.template import TemplateCoder
    from mtmc.strategies import Strategy

    task = load_task("conv_relu_bias")  # the task allows its conv2d as a library call
    row = port_row(task)  # the port itself is a Triton conv
    assert row["port"] == "ok" and row["library"] is False and row["kernels"] >= 1
    port = TemplateCoder().apply(task, None, PORT)
    on_cudnn = TemplateCoder().apply(task, port, Strategy.parse("library conv2d"))
    monkeypatch.setattr(TemplateCoder, "apply", lambda self, task, program, strategy: on_cudnn)
    row = port_row(task)
    assert row["port"] == "ok" and row["library"] is True and row["kernels"] >= 1


def test_a_generated_program_that_does_not_load_is_not_a_port(suite, monkeypatch):
    """A port counts only if its source imports and its ModelNew builds, as the verifier does it."""
    from coders.template import TemplateCoder

    task = load_task(suite / "relu_scale.py")
    port = TemplateCoder().apply(task, None, PORT)
    source = port.source.replace("class ModelNew", "UNDEFINED_NAME\n\n\nclass ModelNew", 1)
    broken = Program(source, port.metadata)
    monkeypatch.setattr(TemplateCoder, "apply", lambda self, task, program, strategy: broken)
    row = port_row(task)
    assert row["port"] == "failed"
    assert row["reason"] == "LoadError: NameError: name 'UNDEFINED_NAME' is not defined"


def test_reasons_group_without_their_particulars():
    assert reason_group("CoderError: module ConvTranspose2d") == "CoderError: module ConvTranspose2d"
    assert reason_group("CoderError: broadcasting [16, 3] to [16, 3, 7]") == \
        "CoderError: broadcasting [N, N] to [N, N, N]"
    assert reason_group("CoderError: tracing the reference failed (TypeError: bad thing 3)") == \
        "CoderError: tracing the reference failed"
    rows = [{"port": "failed", "group": g} for g in ("CoderError: a", "CoderError: b", "CoderError: a")]
    report = coverage_report(rows + [{"port": "ok", "group": ""}], "suite")
    assert report["summary"] == "1 of 4 tasks port (suite)"
    assert report["reasons"] == [{"reason": "CoderError: a", "count": 2},
                                 {"reason": "CoderError: b", "count": 1}]


def test_cli_json_summary_and_exit_code(suite, tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "coverage.json"
    result = mtmc("tasks", f"suite={suite}", "check=port", "json=true", f"out={out}")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report == json.loads(out.read_text())
    assert [row["task"] for row in report["tasks"]] == ["broken", "inverse", "relu_scale"]
    assert [row["port"] for row in report["tasks"]] == ["failed", "failed", "ok"]
    assert report["summary"] == f"1 of 3 tasks port ({suite})"
    assert {r["reason"] for r in report["reasons"]} == {"CoderError: op linalg_inv",
                                                        "TaskError: syntax error at line N: invalid syntax"}
    assert "[3/3] relu_scale: loaded" in result.stderr and "[3/3] relu_scale: port ok" in result.stderr


def test_cli_table_ends_with_the_summary_and_a_bad_check_is_one_line(suite):
    result = mtmc("tasks", f"suite={suite}", "check=port")
    assert result.returncode == 0, result.stderr
    assert "why not" in result.stdout and "op linalg_inv" in result.stdout
    assert result.stdout.strip().splitlines()[-1] == f"1 of 3 tasks port ({suite})"
    result = mtmc("tasks", f"suite={suite}", "check=speed")
    assert result.returncode == 1
    assert result.stderr.strip() == "mtmc tasks: check=speed: use one of port"
