"""TemplateCoder: the deterministic, LLM-free coder (the embedded default).

`port` traces the reference and emits one kernel per op group; every later step edits the kernel
IR kept in `Program.metadata["template_ir"]` and regenerates the source, so the same program and
strategy always give the same result and the verifier's cache hits.
"""

from __future__ import annotations

from coders.template import fuse, steps
from coders.template.conv_lower import round_deep_tf32
from coders.template.emit.module import generate
from coders.template.exact_fp32 import retry_exact
from coders.template.ir import ProgramIR
from coders.template.lower import lower
from coders.template.trace import trace
from mtmc.program import Program
from mtmc.protocols import CoderError
from mtmc.strategies import PORT, Strategy, legal_menu
from mtmc.tasks import Task
from mtmc.verify.verdict import TF32_BEYOND_EAGER, Verdict

IR_KEY = "template_ir"


class TemplateCoder:
    name = "template"

    def apply(self, task: Task, program: Program | None, strategy: Strategy,
              feedback: Verdict | None = None) -> Program:
        """The program after `strategy`; raises CoderError when the step does not apply.

        `feedback`, the verdict of the attempt a retry follows, matters in one case: refused with
        reason tf32_beyond_eager (eager computed an output in fp32 on this GPU), the step's program
        comes with every TF32 kernel in its fp32-exact form (exact_fp32.py), and says so in its
        metadata. Any other feedback is not used: the same program, strategy and feedback always give
        the same result.
        """
        if strategy.kind == "port":
            ir, history, exact = port(task), [], False
        elif strategy.is_stop:
            raise CoderError("`stop` is never applied: the current program is kept")
        else:
            ir = steps.apply(program_ir(program), task, strategy)
            history = list(program.metadata.get("template_steps", []))
            exact = bool(program.metadata.get("exact_fp32"))
        if feedback is not None and feedback.reason == TF32_BEYOND_EAGER:
            ir, exact = retry_exact(ir, strategy), True
        return _program(task, ir, history + [str(strategy)], exact)

    def legal_strategies(self, task: Task, program: Program | None) -> list[Strategy]:
        if program is None:
            return [PORT]
        return legal_menu(steps.legal(program_ir(program), task))


def port(task: Task) -> ProgramIR:
    """The straightforward first program: one kernel per op, elementwise chains merged, a variance
    merged with the mean it centres on (fuse/statistics.py)."""
    return round_deep_tf32(fuse.fuse_statistics(fuse.fuse_chains(lower(trace(task)))))


def program_ir(program: Program | None) -> ProgramIR:
    if program is None or IR_KEY not in program.metadata:
        raise CoderError("the template coder can only continue programs it wrote (no template IR)")
    return ProgramIR.from_dict(program.metadata[IR_KEY])


def _program(task: Task, ir: ProgramIR, history: list[str], exact_fp32: bool = False) -> Program:
    """`exact_fp32`: some retry made the TF32 kernels fp32-exact, which `template_steps` alone does not
    replay (the steps are the planner's; the retry's feedback is the verifier's)."""
    metadata = {IR_KEY: ir.to_dict(), "template_steps": history, "coder": "template"}
    return Program(generate(task, ir), metadata | ({"exact_fp32": True} if exact_fp32 else {}))
