"""TemplateCoder: the deterministic, LLM-free coder (the embedded default).

`port` traces the reference and emits one kernel per op group; every later step edits the kernel
IR kept in `Program.metadata["template_ir"]` and regenerates the source, so the same program and
strategy always give the same result and the verifier's cache hits.
"""

from __future__ import annotations

from coders.template import fuse, steps
from coders.template.conv_lower import round_deep_tf32
from coders.template.emit.module import generate
from coders.template.ir import ProgramIR
from coders.template.lower import lower
from coders.template.trace import trace
from mtmc.program import Program
from mtmc.protocols import CoderError
from mtmc.strategies import PORT, Strategy, legal_menu
from mtmc.tasks import Task
from mtmc.verify.verdict import Verdict

IR_KEY = "template_ir"


class TemplateCoder:
    name = "template"

    def apply(self, task: Task, program: Program | None, strategy: Strategy,
              feedback: Verdict | None = None) -> Program:
        """The program after `strategy`; raises CoderError when the step does not apply.

        `feedback` is not used: the same program and strategy always give the same result.
        """
        if strategy.kind == "port":
            ir = port(task)
            return _program(task, ir, [str(strategy)])
        if strategy.is_stop:
            raise CoderError("`stop` is never applied: the current program is kept")
        ir = program_ir(program)
        new = steps.apply(ir, task, strategy)
        history = list((program.metadata if program else {}).get("template_steps", []))
        return _program(task, new, history + [str(strategy)])

    def legal_strategies(self, task: Task, program: Program | None) -> list[Strategy]:
        if program is None:
            return [PORT]
        return legal_menu(steps.legal(program_ir(program), task))


def port(task: Task) -> ProgramIR:
    """The straightforward first program: one kernel per op, elementwise chains merged."""
    return round_deep_tf32(fuse.fuse_chains(lower(trace(task))))


def program_ir(program: Program | None) -> ProgramIR:
    if program is None or IR_KEY not in program.metadata:
        raise CoderError("the template coder can only continue programs it wrote (no template IR)")
    return ProgramIR.from_dict(program.metadata[IR_KEY])


def _program(task: Task, ir: ProgramIR, history: list[str]) -> Program:
    return Program(generate(task, ir), {IR_KEY: ir.to_dict(), "template_steps": history,
                                        "coder": "template"})
