"""The port's merge of paired statistics: a reduction of values centred on another reduction of the
same data over the same rows (a variance about its mean) becomes one kernel with it.

Batch norm's statistics (trace/norms.py) are each (n, c) plane's mean, then the mean of the plane's
squared deviations from it: unmerged, a reduction reads x, an elementwise kernel reads x again and
writes the squares, a second reduction reads them back (three passes over x's size and a write of
it, before the normalization reads x once more). Merged, the two reductions are a Welford pair over
one read of x (emit/reduce_pairs.py), which `fuse all` makes too, but only as a step after the port:
KernelBench level-1 33_BatchNorm's port ([64, 64, 512, 512] fp32, 4 GiB a pass) spent the whole time
limit of its verdict and never reached a step.
"""

from __future__ import annotations

from coders.template.emit.common import FusionError
from coders.template.fuse.chains import pairs
from coders.template.fuse.merge import merge
from coders.template.fuse.queries import NotFusable, base_of
from coders.template.ir import Kernel, ProgramIR, step_uses


def fuse_statistics(ir: ProgramIR) -> ProgramIR:
    """Merge each elementwise kernel that centres a reduction's input on its result into the
    reduction reading it, and that into the first reduction: reductions over the same rows of the
    same space, so the merged kernel reads the input once for both. Any other program is unchanged."""
    while True:
        for kind, producer, consumer in pairs(ir):
            if kind != "prologue" or consumer.kind != "reduce" or producer.kind != "pointwise":
                continue
            first = _centred_on(ir, producer, consumer)
            if first is None:
                continue
            try:
                inner = merge(ir, producer, consumer)
                merged = _maker(inner, consumer.outputs[0].value)
                fused = merge(inner, _maker(inner, first.outputs[0].value), merged)
            except (NotFusable, FusionError):
                continue
            ir = fused
            break
        else:
            return ir


def _centred_on(ir: ProgramIR, producer: Kernel, consumer: Kernel) -> Kernel | None:
    """The reduction whose result and input the elementwise `producer` reads, over the rows and
    space `consumer` reduces, if there is one."""
    read = {base_of(ir, value) for value in step_uses(producer)}
    for value in read:
        first = ir.producer(value)
        if isinstance(first, Kernel) and first.kind == "reduce" and first is not consumer and \
                first.space["traced"] == consumer.space["traced"] and \
                first.space["red"] == consumer.space["red"] and \
                first.space.get("groups") == consumer.space.get("groups") and \
                base_of(ir, first.space["input"]) in read:
            return first
    return None


def _maker(ir: ProgramIR, value: str) -> Kernel:
    step = ir.producer(value)
    if not isinstance(step, Kernel):
        raise NotFusable(f"{value} is not a kernel's output")
    return step
