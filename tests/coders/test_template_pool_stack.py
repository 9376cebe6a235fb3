"""The rows form's stacked planes (config `stack`, coders/template/emit/pool_stack.py; a probe key,
off in the port) against PyTorch on the CPU interpreter at small odd sizes: a strip of P planes' rows
with and without the shift, a plane count that leaves the last stack short (clamped planes, masked
stores), rows too wide for a plane's columns (STACK = 1: the rows form's strips), the ring and the
slide, 64-bit indices."""

from __future__ import annotations

import pytest

from coders.template.emit import pool_stack
from coders.template.emit.module import generate
from coders.template.emit.pool_regions import renamed
from coders.template.ir import ProgramIR
from tests.coders.test_template import check_module, import_program
from tests.coders.test_template_pool import formed, pool_task

# 43's, 46's and 42's windows; planes (batch x channel) 3 and 6: the last stack of 2 or 4 is short
STACK_CASES = [
    (3, "nn.MaxPool3d(3, stride=2, padding=1, dilation=3)", ((1, 3, 7, 9, 29), (2, 3, 6, 8, 19))),
    (3, "nn.AvgPool3d(3, stride=2, padding=1)", ((1, 3, 5, 6, 27), (2, 3, 4, 5, 17))),
    (2, "nn.MaxPool2d(4, stride=1, padding=1)", ((1, 3, 9, 14), (2, 3, 7, 11))),
]
# (strip, planes, shift, slide): 16 columns a plane (every row fits); 8 (43's 29-wide input: 13
# outputs, too wide: STACK = 1)
VARIANTS = [(32, 2, 2, 2), (64, 4, 4, 0), (32, 2, 0, 2), (64, 4, 8, 2), (8, 2, 2, 0)]


def stack_module(task, tmp_path, tag: str, strip: int, planes: int, shift: int, slide: int,
                 wide: bool = False):
    program = formed(task, [f"tile BLOCK_N={strip}"])
    ir = ProgramIR.from_dict(program.metadata["template_ir"])
    (kernel,) = ir.kernels()
    kernel.config.pop("slide", None)
    kernel.config.update(BAND=3, stack=planes, **({"shift": shift} if shift else {}),
                         **({"slide": slide} if slide else {}))
    assert pool_stack.is_stack(kernel)
    source = generate(task, ir)
    assert "outer = plane_o0 + tl.arange(0, BLOCK_N) // (BLOCK_N // STACK)" in source
    assert ("plane_keep = outer" in source) == bool(shift)
    if wide:
        source = source.replace("> 2**30", ">= 0")
    return import_program(source, tmp_path, tag)


@pytest.mark.parametrize("nd, module, shapes", STACK_CASES, ids=[m for _, m, _ in STACK_CASES])
@pytest.mark.parametrize("strip, planes, shift, slide", VARIANTS,
                         ids=["s32-p2-g2-slide", "s64-p4-g4-ring", "s32-p2-plain-slide", "s64-p4-g8-slide",
                              "s8-p2-g2-unstacked"])
def test_stack_matches_pytorch(nd, module, shapes, strip, planes, shift, slide, tmp_path):
    task = pool_task(module, nd=nd, shapes=shapes)
    check_module(task, stack_module(task, tmp_path, "stack", strip, planes, shift, slide), task.sizes("cpu"))


def test_stack_wide_indices(tmp_path):
    module = "nn.MaxPool3d(3, stride=2, padding=1, dilation=3)"
    task = pool_task(module, nd=3, shapes=STACK_CASES[0][2])
    check_module(task, stack_module(task, tmp_path, "stack_wide", 64, 4, 8, 2, wide=True), task.sizes("cpu"))


def test_stack_preconditions():
    """A plane's columns hold at least one group; 1-D pools and vector taps keep the rows form."""
    task = pool_task(STACK_CASES[0][1], nd=3, shapes=STACK_CASES[0][2])
    (kernel,) = ProgramIR.from_dict(formed(task, ["tile BLOCK_N=16"]).metadata["template_ir"]).kernels()
    kernel.config.update(stack=4, shift=8)
    assert not pool_stack.is_stack(kernel)  # 4 columns a plane, groups of 8
    kernel.config.update(stack=3, shift=2)
    assert not pool_stack.is_stack(kernel)
    kernel.config.update(stack=2)
    assert pool_stack.is_stack(kernel)
    task = pool_task("nn.MaxPool1d(3, stride=1, padding=1)", nd=1)
    (kernel,) = ProgramIR.from_dict(formed(task, ["tile BLOCK_N=16"]).metadata["template_ir"]).kernels()
    kernel.config.update(stack=2)
    assert not pool_stack.is_stack(kernel)


def test_a_body_value_named_like_the_stack_constexpr_is_renamed():
    """STACK (and SHIFT) are kernel parameters of the rows form: a body value of that name is renamed
    (pool_regions.renamed), as the other template names are."""
    task = pool_task(STACK_CASES[0][1], nd=3, shapes=STACK_CASES[0][2])
    (kernel,) = ProgramIR.from_dict(formed(task, ["tile BLOCK_N=16"]).metadata["template_ir"]).kernels()
    for name in ("STACK", "SHIFT"):
        kernel.body[0].out = name
        assert renamed(kernel).body[0].out == f"v_{name}"
