"""Helpers the conv fusion tests share (test_template_conv_reduce.py, test_template_conv_pool.py):
the port at fp32 precision and every `fuse epilogue` step after it."""

from __future__ import annotations

from coders.template import TemplateCoder
from coders.template.ir import ProgramIR
from mtmc.program import Program
from mtmc.strategies import PORT, Strategy
from mtmc.tasks import Task

coder = TemplateCoder()
FUSE = Strategy.parse("fuse epilogue")


def kernels(program: Program) -> list:
    return ProgramIR.from_dict(program.metadata["template_ir"]).kernels()


def ieee_port(task: Task) -> Program:
    """The port at fp32 precision (the conv ports on TF32): checked at fp32 tolerance. A depthwise
    conv (no dot) has no precision to set."""
    port, ieee = coder.apply(task, None, PORT), Strategy.parse("precision ieee")
    return coder.apply(task, port, ieee) if ieee in coder.legal_strategies(task, port) else port


def fused(task: Task, program: Program) -> Program:
    """Every `fuse epilogue` step, each one kernel fewer than before."""
    while FUSE in coder.legal_strategies(task, program):
        before = len(kernels(program))
        program = coder.apply(task, program, FUSE)
        assert len(kernels(program)) == before - 1
    return program
