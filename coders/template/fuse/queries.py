"""What fusion asks of a program: the tensor a view reads, the results, whether a merged kernel
is one the emitters can write, a kernel's space, and a cache of each step's uses."""

from __future__ import annotations

import re

from coders.template.emit import conv as conv_emit
from coders.template.emit import conv_transpose as conv_transpose_emit
from coders.template.emit import matmul as matmul_emit
from coders.template.emit import pool as pool_emit
from coders.template.emit import reduce as reduce_emit
from coders.template.emit import scan as scan_emit
from coders.template.emit.common import FusionError, check_operands
from coders.template.ir import Kernel, ProgramIR, PyStep, step_uses
from coders.template.scans import WALK_KINDS

# kernels computing a GEMM (explicit or implicit) on an fp32 accumulator tile: hosts of the
# elementwise epilogues after them, never guests of another kernel
GEMM_KINDS = ("matmul", "conv", "conv_transpose")
# elementwise ops that read their element's row and column (of the last two dims)
TRIANGLES = ("triu", "tril")


class NotFusable(ValueError):
    pass


# --------------------------------------------------------------------------------------------------
# queries
# --------------------------------------------------------------------------------------------------

def base_of(ir: ProgramIR, value: str) -> str:
    """Follow views that only add or drop size-1 dims back to the tensor they view."""
    while True:
        step = ir.producer(value)
        if isinstance(step, PyStep) and step.alias_of and len(step.outs) == 1:
            value = step.alias_of
        else:
            return value


def result_names(ir: ProgramIR) -> set[str]:
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", ir.result)) & set(ir.values)


def validate(kernel: Kernel) -> None:
    """Raise FusionError if the kernel kind cannot address one of its operands."""
    if kernel.kind == "pointwise":
        full = list(range(len(kernel.space["traced"])))
        if any(o.dims != full for o in kernel.outputs):
            raise FusionError("an elementwise kernel writes whole outputs only")
    if kernel.kind == "reduce":
        reduce_emit.Layout(kernel).check()
        if kernel.config.get("split_k", 1) > 1 and not reduce_emit.splittable(kernel):
            raise FusionError("the split reduction would need dependent passes")
    elif kernel.kind == "matmul":
        check_operands(kernel, matmul_emit.epilogue_axes(kernel))
    elif kernel.kind == "conv":
        conv_emit.check(kernel)
    elif kernel.kind == "conv_transpose":
        conv_transpose_emit.check(kernel)
    elif kernel.kind == "pool":
        pool_emit.check(kernel)
    elif kernel.kind in WALK_KINDS:
        scan_emit.check(kernel)
    if kernel.kind not in ("pointwise", "matmul") and \
            any(op.op in TRIANGLES for op in kernel.body):
        raise FusionError("triu / tril read the row and column of a pointwise or matmul kernel only")
    if kernel.kind == "matmul" and any(op.op in TRIANGLES for op in kernel.body):
        matmul_emit.check_triangles(kernel)


def space_shape(ir: ProgramIR, kernel: Kernel) -> list[int]:
    return list(kernel.space["traced"])


class CachedUses:
    """step_uses of each step object, computed once. fuse_chains asks for them thousands of times
    on a large program, and a step in an IR is never edited once placed (merges copy on write); the
    cache holds the steps themselves, so an id is never reused while it is cached."""

    def __init__(self) -> None:
        self.cache: dict[int, tuple[Kernel | PyStep, list[str]]] = {}

    def __call__(self, step: Kernel | PyStep) -> list[str]:
        hit = self.cache.get(id(step))
        if hit is None or hit[0] is not step:
            hit = self.cache[id(step)] = (step, step_uses(step))
        return hit[1]
