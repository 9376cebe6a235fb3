"""benchmarks/bench_queue.sh: bench jobs in order, each into its own folder, until a deadline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_queue.sh"


def queue(state: Path, deadline_s: int, *jobs: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHON": sys.executable}
    return subprocess.run(["bash", str(SCRIPT), str(state), str(deadline_s), *jobs], capture_output=True,
                          text=True, timeout=300, env=env)


def test_jobs_run_into_their_own_folders_until_the_deadline(tmp_path):
    done = queue(tmp_path, 240, "one|suite=builtin tasks=[softplus] max_steps=1")
    assert done.returncode == 0, done.stderr
    rows = json.loads((tmp_path / "one" / "results.json").read_text())["tasks"]
    assert [(r["task"], r["correct"]) for r in rows] == [("softplus", True)]
    assert "=== one: exit 0" in done.stdout

    late = queue(tmp_path, 10, "two|suite=builtin tasks=[softplus] max_steps=1")
    assert "=== two: skipped" in late.stdout and not (tmp_path / "two").exists()


def test_usage_without_jobs():
    done = subprocess.run(["bash", str(SCRIPT), "/tmp/x"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "usage" in done.stderr
