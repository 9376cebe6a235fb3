"""Scripted fakes for graph tests: a tiny task and a verifier that reads the outcome the scripted
coder (tests/scripted_coder.py) wrote into the program, so verdicts follow the test's script exactly."""

from __future__ import annotations

import time

from mtmc.program import Program
from mtmc.tasks import Task
from mtmc.verify.verdict import Status, Verdict
from tests.scripted_coder import last_outcome

TASK_SOURCE = '''
import torch

class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2.0

def get_inputs():
    return [torch.randn(64, 128)]

def get_init_inputs():
    return []
'''


def tiny_task() -> Task:
    return Task(name="tiny_relu", source=TASK_SOURCE)


class TaggedVerifier:
    """Verdict from the program's last `# step: ... -> <outcome>` tag: "ok", "ok@<ms>" (timed,
    against `eager_ms`), or a Status value. `sleep_s` makes a step take time (crash tests)."""

    def __init__(self, eager_ms: float | None = None, sleep_s: float = 0.0) -> None:
        self.eager_ms = eager_ms
        self.sleep_s = sleep_s
        self.calls = 0

    def verify(self, task: Task, program: Program) -> Verdict:
        self.calls += 1
        if self.sleep_s:
            time.sleep(self.sleep_s)
        tag = last_outcome(program.source)
        status, _, ms = tag.partition("@")
        if Status(status) != Status.OK:
            return Verdict(Status(status), message=f"scripted {status}", device="fake")
        timed = bool(ms)
        return Verdict(Status.OK, candidate_ms=float(ms) if timed else None,
                       eager_ms=self.eager_ms if timed else None, device="fake")
