"""Fakes for the bench tests: tiny in-memory tasks, and a verifier that "times" scripted programs.

The scripted coder (tests/scripted_coder.py) tags each program with the outcome its script chose
(`ok@0.5` = correct, 0.5 ms); `FakeTimedVerifier` turns the tag into a verdict with per-task eager
and torch.compile times, so the bench's metrics run on known numbers through the real loop. Its
device names the worker's CUDA_VISIBLE_DEVICES, so a test can see which GPU worker ran a task.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from mtmc.budgets import Budgets
from mtmc.program import Program
from mtmc.tasks import Task
from mtmc.verify.verdict import Status, Verdict
from tests.scripted_coder import applied_steps, last_outcome

TASK_SOURCE = '''
import torch

class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) * {scale}

def get_inputs():
    return [torch.randn(64, 128)]  # fp32 in + out: 65536 compulsory bytes

def get_init_inputs():
    return []
'''
TASK_BYTES = 2 * 64 * 128 * 4

# Each task is ported at 1.0 ms, then a tile step runs at 0.5 ms (by default), then the planner stops.
EAGER = {"a": 2.0, "b": 0.8, "c": 1.0, "d": 1.0}
COMPILED = {"a": 1.0, "b": 0.4, "c": 0.55, "d": 1.0}
BUDGETS = Budgets(max_steps=4, max_retries=0, time_limit_s=600.0)
REWARD = {"_target_": "mtmc.reward.RewardConfig"}


def scripted_roles(tile: str = "ok@0.5", **verifier) -> dict:
    """`_target_` configs of the scripted planner and coder and the fake verifier (kwargs go to it)."""
    return {
        "planner": {"_target_": "tests.scripted_planner.ScriptedPlanner",
                    "steps": ["port", "tile BLOCK=1024"]},
        "coder": {"_target_": "tests.scripted_coder.ScriptedCoder",
                  "script": {"port": ["ok@1.0"], "tile BLOCK=1024": [tile]}},
        "verifier": {"_target_": "tests.bench.fakes.FakeTimedVerifier", "eager_ms": EAGER,
                     "compiled_ms": COMPILED, **verifier},
    }


def tiny_tasks(*names: str) -> list[Task]:
    return [Task(name=name, source=TASK_SOURCE.format(scale=i + 2)) for i, name in enumerate(names)]


def fake_device() -> str:
    return f"fake gpu {os.environ.get('CUDA_VISIBLE_DEVICES', '-')}"


class FakeTimedVerifier:
    """Verdicts from the program's last tag, timed against `eager_ms[task]` / `compiled_ms[task]`.

    calls_log: a file that gets one line `<task> <step>` per call (counts calls across processes).
    crash_flag: while this file exists, verifying a `crash_step` program of `crash_task` removes the
      file and then raises (crash_exit=False) or kills the whole process (crash_exit=True): a
      one-off crash in the middle of a task; crash_interrupt=True raises KeyboardInterrupt instead,
      as a Ctrl-C or a deadline's SIGINT would.
    concurrency: how many verdicts it claims to judge at once (as verifier=ray's actors do); the
      class counts the calls in flight across threads (`in_flight`, its peak `max_in_flight`).
    """

    in_flight = 0
    max_in_flight = 0
    _counting = threading.Lock()

    def __init__(self, eager_ms: dict[str, float], compiled_ms: dict[str, float], sleep_s: float = 0.0,
                 calls_log: str | None = None, crash_flag: str | None = None, crash_task: str = "",
                 crash_step: str = "", crash_exit: bool = False, crash_interrupt: bool = False,
                 concurrency: int = 1) -> None:
        self.concurrency = concurrency
        self.crash_interrupt = crash_interrupt
        self.eager_ms, self.compiled_ms = dict(eager_ms), dict(compiled_ms)
        self.sleep_s = sleep_s
        self.calls_log = calls_log
        self.crash_flag, self.crash_task, self.crash_step = crash_flag, crash_task, crash_step
        self.crash_exit = crash_exit

    def verify(self, task: Task, program: Program) -> Verdict:
        step = applied_steps(program.source)[-1]
        if self.calls_log:
            with open(self.calls_log, "a") as log:
                log.write(f"{task.name} {step}\n")
        self._maybe_crash(task, step)
        self._count(+1)
        time.sleep(self.sleep_s)
        self._count(-1)
        status, _, ms = last_outcome(program.source).partition("@")
        if Status(status) != Status.OK:
            return Verdict(Status(status), message=f"scripted {status}", device=fake_device())
        return Verdict(Status.OK, candidate_ms=float(ms), eager_ms=self.eager_ms[task.name],
                       compiled_ms=self.compiled_ms[task.name], device=fake_device())

    @classmethod
    def _count(cls, change: int) -> None:
        with cls._counting:
            cls.in_flight += change
            cls.max_in_flight = max(cls.max_in_flight, cls.in_flight)

    def _maybe_crash(self, task: Task, step: str) -> None:
        flag = Path(self.crash_flag) if self.crash_flag else None
        if flag is None or not flag.exists() or (task.name, step) != (self.crash_task, self.crash_step):
            return
        flag.unlink()
        if self.crash_exit:
            os._exit(3)  # the worker process dies mid-task, as a segfault or an OOM kill would
        if self.crash_interrupt:
            raise KeyboardInterrupt
        raise RuntimeError(f"verifier harness failed on {task.name}")

    def __enter__(self) -> FakeTimedVerifier:
        return self

    def __exit__(self, *exc: object) -> None:
        pass
