"""`mtmc optimize` stopped by Ctrl-C or by a dead coder server: one sentence with the resume command,
no traceback; that command (resume= alone) continues the run, and a conflicting override is refused."""

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time

TASK = """
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

STOPPED = re.compile(r"stopped at step (\d+); continue with: (mtmc optimize resume=\S+)$")


def default_sigint():
    # A suite started in the background (`cmd &` without job control) runs with SIGINT ignored, which
    # children inherit and Python then leaves alone: Ctrl-C must reach the child as it does a terminal's.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def mtmc(cwd, *args, **kwargs):
    return subprocess.Popen([sys.executable, "-m", "mtmc.cli", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=default_sigint, **kwargs)


def steps_done(run_dir):
    path = run_dir / "trajectory.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def test_ctrl_c_stops_with_the_resume_command_which_continues_the_run(tmp_path):
    (tmp_path / "relu_scale.py").write_text(TASK)
    run_dir = tmp_path / "run"
    started = mtmc(tmp_path, "optimize", "task=relu_scale.py", "verifier=interpreter", "max_steps=3",
                   f"hydra.run.dir={run_dir}", start_new_session=True)
    deadline = time.monotonic() + 300
    while not steps_done(run_dir) and started.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    os.killpg(started.pid, signal.SIGINT)  # as Ctrl-C does: the whole process group, verifier workers too
    _, err = started.communicate(timeout=300)
    assert started.returncode == 130, err[-3000:]
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith("mtmc optimize: interrupted; stopped at step ")
    step, command = STOPPED.search(last).groups()
    assert int(step) >= 1 and command == f"mtmc optimize resume={run_dir}"

    conflicting = mtmc(tmp_path, *shlex.split(command)[1:], "planner=random")
    _, err = conflicting.communicate(timeout=300)
    assert conflicting.returncode == 1
    assert err.strip() == (f"mtmc optimize: resume={run_dir} continues its own run (task=relu_scale.py "
                           "verifier=interpreter max_steps=3), and planner=random would change it: "
                           "drop that, or start a fresh run")

    resumed = mtmc(tmp_path, *shlex.split(command)[1:])  # resume= alone: task and roles from the folder
    _, err = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, err[-3000:]
    assert re.search(rf"resuming relu_scale at \w+ \(step {step}\)", err)  # where the interrupt landed
    assert [r["step"] for r in steps_done(run_dir) if r["attempt"] == 0] == [0, 1, 2]


def test_a_dead_coder_server_stops_with_the_resume_command(tmp_path):
    (tmp_path / "relu_scale.py").write_text(TASK)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    run_dir = tmp_path / "run"
    started = mtmc(tmp_path, "optimize", "task=relu_scale.py", "verifier=interpreter", "max_steps=3",
                   "coder=openai", "coder.model=m", f"coder.base_url=http://127.0.0.1:{port}/v1",
                   "coder.max_retries=0", f"hydra.run.dir={run_dir}")
    _, err = started.communicate(timeout=300)
    assert started.returncode == 1, err[-3000:]
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert "Connection refused" in last  # the coder's own error says what is wrong
    assert last.endswith(f"; stopped at step 1; continue with: mtmc optimize resume={run_dir}")
