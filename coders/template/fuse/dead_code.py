"""Dead code and order: a kernel's unused operands and ops dropped, steps no result needs removed,
and whether every step comes after the steps it reads."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import replace

from coders.template.emit.common import needed
from coders.template.fuse.queries import result_names
from coders.template.ir import Kernel, ProgramIR, PyStep, step_outs, step_uses


def compact(kernel: Kernel) -> None:
    """Drop body ops no output needs and operands no op loads."""
    keep = needed(kernel.body, [o.src for o in kernel.outputs])
    loaded = sorted({op.args[0] for op in keep if op.op == "load"})
    remap = {old: new for new, old in enumerate(loaded)}
    kernel.operands = [kernel.operands[i] for i in loaded]
    kernel.body = [replace(op, args=[remap[op.args[0]]]) if op.op == "load" else op for op in keep]


def eliminate_dead(ir: ProgramIR, uses: Callable[[Kernel | PyStep], list[str]] = step_uses) -> None:
    """Drop steps and outputs nobody reads. Copy-on-write: a kernel that loses outputs is replaced
    by a copy in `ir.steps`, so an IR sharing its step objects with another one (merge) never
    changes the other."""
    while True:
        used = result_names(ir)
        for step in ir.steps:
            used.update(uses(step))
        kept: list[Kernel | PyStep] = []
        for step in ir.steps:
            if isinstance(step, PyStep):
                if set(step.outs) & used:
                    kept.append(step)
                continue
            live = [o for o in step.outputs if o.value in used]
            if len(live) == len(step.outputs):
                kept.append(step)
            elif live:
                trimmed = copy.copy(step)  # compact reassigns operands and body, never edits them
                trimmed.outputs = live
                compact(trimmed)
                kept.append(trimmed)
        if len(kept) == len(ir.steps) and all(a is b for a, b in zip(kept, ir.steps, strict=True)):
            return
        ir.steps = kept


def in_order(ir: ProgramIR, uses: Callable[[Kernel | PyStep], list[str]] = step_uses) -> bool:
    defined = set(ir.args)
    for step in ir.steps:
        if not defined.issuperset(uses(step)):
            return False
        defined |= set(step_outs(step))
    return True
