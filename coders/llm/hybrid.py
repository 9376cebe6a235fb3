"""HybridCoder: a composite coder, a port coder's program as the start and an LLM coder from there on.

With the template coder as `start` (conf/coder/openai.yaml: `start:`, on while `hybrid_start` is),
the first step is a verified-correct program for free where the template supports the task; the LLM
takes over from the second step, and from the first one where `start` cannot port the task or its
port failed verification (a retry of the port, with the verdict as feedback, goes to the model,
which is shown the failed port). One refusal is the start coder's to mend: `tf32_beyond_eager` (a TF32
conv where eager computed in fp32 on that GPU), which the template coder's retry answers with the same
port in an fp32-exact form (coders/template/exact_fp32.py), a known-good program no model call can beat.
"""

from __future__ import annotations

from coders.llm.llm_coder import LLMCoder
from mtmc.program import Program
from mtmc.protocols import Coder, CoderError
from mtmc.strategies import Strategy
from mtmc.tasks import Task
from mtmc.verify.verdict import TF32_BEYOND_EAGER, Verdict


class HybridCoder:
    def __init__(self, start: Coder, llm: LLMCoder) -> None:
        self.start = start
        self.llm = llm
        self.name = llm.name

    def apply(self, task: Task, program: Program | None, strategy: Strategy,
              feedback: Verdict | None = None) -> Program:
        if strategy.kind == "port" and (feedback is None or feedback.reason == TF32_BEYOND_EAGER):
            port = self._port(task, strategy, feedback)
            if port is not None:
                return self.llm.adopt(task, strategy, port)
        return self.llm.apply(task, program, strategy, feedback)

    def legal_strategies(self, task: Task, program: Program | None) -> list[Strategy]:
        return self.llm.legal_strategies(task, program)

    def _port(self, task: Task, strategy: Strategy, feedback: Verdict | None) -> Program | None:
        """The start coder's port (its retry with `feedback`), or None where it cannot give one."""
        try:
            return self.start.apply(task, None, strategy, feedback)
        except CoderError:
            return None


def llm_coder(llm: LLMCoder, start: Coder | None, hybrid_start: bool) -> Coder:
    """The LLM coder, composed with `start` for its first step where `hybrid_start` asks for it."""
    return HybridCoder(start, llm) if hybrid_start and start is not None else llm
