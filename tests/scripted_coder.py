"""A scripted fake coder for graph tests and smoke runs: no LLM, no Triton, fully predictable.

Each applied step appends one line to the program, `# step: <strategy> -> <outcome>`, so the program
records its own history and a fake verifier can read the outcome from the source it is given:

    coder = ScriptedCoder({"tile BLOCK=1024": ["incorrect", "ok@0.5"], "vectorize": ["raise:no"]})

Outcomes per strategy text are used in call order (the last one repeats); a strategy without a
script gets "ok". An outcome is "ok", "ok@<candidate ms>", any other verdict status
("incorrect", "compile_error", ...) or "raise:<message>" (apply raises CoderError). Steps already
in the program are no longer legal, so a run can also end with nothing left to do.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from mtmc.program import Program
from mtmc.protocols import CoderError
from mtmc.strategies import PORT, STOP, Strategy
from mtmc.tasks import Task
from mtmc.verify.verdict import Verdict

BASE_SOURCE = '''"""A scripted program (tests/scripted_coder.py): each applied step left a `# step:` line."""
import torch


class ModelNew(torch.nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, *inputs):
        return inputs[0]

'''
STEP_PREFIX = "# step: "
DEFAULT_LEGAL = ("fuse epilogue", "tile BLOCK=1024", "vectorize", "num_warps 8", "autotune")


class ScriptedCoder:
    def __init__(self, script: Mapping[str, Sequence[str]] | None = None,
                 legal: Sequence[str] = DEFAULT_LEGAL, usage: Mapping[str, int] | None = None) -> None:
        self.script = {str(Strategy.parse(k)): list(v) for k, v in (script or {}).items()}
        self.legal = [Strategy.parse(text) for text in legal]
        self.usage = dict(usage or {})
        self.calls: Counter[str] = Counter()  # per strategy text; a resumed run starts over at 0

    def apply(self, task: Task, program: Program | None, strategy: Strategy,
              feedback: Verdict | None = None) -> Program:
        text = str(strategy)
        outcomes = self.script.get(text, ["ok"])
        outcome = outcomes[min(self.calls[text], len(outcomes) - 1)]
        self.calls[text] += 1
        if outcome.startswith("raise:"):
            raise CoderError(outcome.removeprefix("raise:").strip())
        source = (program.source if program else BASE_SOURCE) + f"{STEP_PREFIX}{text} -> {outcome}\n"
        return Program(source, {"usage": dict(self.usage)} if self.usage else {})

    def legal_strategies(self, task: Task, program: Program | None) -> list[Strategy]:
        if program is None:
            return [PORT]
        done = set(applied_steps(program.source))
        return [s for s in self.legal if str(s) not in done] + [STOP]


def applied_steps(source: str) -> list[str]:
    """Strategy texts recorded in a scripted program, in order."""
    return [line.removeprefix(STEP_PREFIX).rsplit(" -> ", 1)[0]
            for line in source.splitlines() if line.startswith(STEP_PREFIX)]


def last_outcome(source: str) -> str:
    """The outcome tag of the most recent step in a scripted program ("ok" if none)."""
    lines = [line for line in source.splitlines() if line.startswith(STEP_PREFIX)]
    return lines[-1].rsplit(" -> ", 1)[1] if lines else "ok"
