"""`mtmc optimize` end to end on the CPU with the defaults, then `mtmc verify` on its kernel.py."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

TASKS = ["softmax_lastdim", "gelu_mul_sigmoid", "layernorm"]


def mtmc(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mtmc.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=900)


@pytest.mark.parametrize("task", TASKS)
def test_optimize_then_verify_its_kernel(tmp_path, task):
    run_dir = tmp_path / "run"
    result = mtmc(tmp_path, "optimize", f"task={task}", "max_steps=3", f"hydra.run.dir={run_dir}")
    assert result.returncode == 0, result.stderr[-3000:]
    for name in ("kernel.py", "trajectory.jsonl", "report.md", "speedup.png", "result.json", "config.yaml"):
        assert (run_dir / name).is_file(), name
    steps = [json.loads(line) for line in (run_dir / "trajectory.jsonl").read_text().splitlines()]
    assert steps[0]["strategy"] == "port" and steps[0]["status"] == "ok"

    verdict_file = tmp_path / "verdict.json"
    check = mtmc(tmp_path, "verify", f"task={task}", f"candidate={run_dir / 'kernel.py'}",
                 f"json_out={verdict_file}")
    assert check.returncode == 0, check.stderr[-3000:]
    assert json.loads(verdict_file.read_text())["status"] == "ok"
