"""`mtmc optimize` with coder=openai against a real model server. Opt-in: it needs a server and
spends tokens, so it is marked `live` (deselected by default) and skipped unless MTMC_LIVE_BASE_URL
and MTMC_LIVE_MODEL are set.

    vllm serve Qwen/Qwen2.5-Coder-7B-Instruct --port 8000 &
    MTMC_LIVE_BASE_URL=http://127.0.0.1:8000/v1 MTMC_LIVE_MODEL=Qwen/Qwen2.5-Coder-7B-Instruct \\
        .venv/bin/python -m pytest -m live tests/live

A hosted API works the same way: its base URL, its model name, and its key in OPENAI_API_KEY (or set
MTMC_LIVE_KEY_ENV to the variable that holds it). MTMC_LIVE_TASK picks the task (gelu_tanh).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.live

BASE_URL = os.environ.get("MTMC_LIVE_BASE_URL")
MODEL = os.environ.get("MTMC_LIVE_MODEL")


@pytest.mark.skipif(not (BASE_URL and MODEL), reason="set MTMC_LIVE_BASE_URL and MTMC_LIVE_MODEL")
def test_optimize_with_a_real_model(tmp_path):
    run_dir = tmp_path / "run"
    task = os.environ.get("MTMC_LIVE_TASK", "gelu_tanh")
    key_env = os.environ.get("MTMC_LIVE_KEY_ENV", "OPENAI_API_KEY")
    result = subprocess.run(
        [sys.executable, "-m", "mtmc.cli", "optimize", f"task={task}", "coder=openai",
         f"coder.base_url={BASE_URL}", f"coder.model={MODEL}", f"coder.api_key_env={key_env}",
         "coder.hybrid_start=false", "max_steps=3", "max_retries=2", f"hydra.run.dir={run_dir}"],
        cwd=tmp_path, capture_output=True, text=True, timeout=3600)
    assert result.returncode == 0, result.stderr[-5000:]
    steps = [json.loads(line) for line in (run_dir / "trajectory.jsonl").read_text().splitlines()]
    llm_attempts = [s for s in steps if s["usage"]]
    assert llm_attempts, "no attempt reached the model"
    assert all(s["usage"]["completion_tokens"] > 0 for s in llm_attempts)
    # the model wrote the port itself (hybrid start is off): a real model should manage one correct
    # port in three attempts on a one-op task; if it does not, the run folder says why
    assert (run_dir / "kernel.py").is_file(), f"no program accepted; see {run_dir / 'report.md'}"
    assert json.loads((run_dir / "result.json").read_text())["status"] == "ok"
