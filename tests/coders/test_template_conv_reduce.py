"""A reduction over a conv's output channels fused into the conv kernel's epilogue (fuse/channels.py,
emit/channel_reduce.py): the steps that take it, the program it makes and what stays refused."""

from __future__ import annotations

import pytest

from coders.template import TemplateCoder, fuse
from coders.template.emit import conv as conv_emit
from coders.template.ir import ProgramIR
from mtmc.program import Program
from mtmc.strategies import PORT, Strategy
from mtmc.tasks import Task
from tests.coders.test_template import check

coder = TemplateCoder()
FUSE = Strategy.parse("fuse epilogue")

SOURCE = '''
import torch
import torch.nn as nn

B, C_IN, C_OUT, S = {defaults}


class Model(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.Conv{nd}d(c_in, c_out, 3{args})
        self.shift = nn.Parameter(torch.randn(c_out, {ones}))

    def forward(self, x):
        x = self.conv(x) * 1.5 + self.shift
        x = {reduction}
        return torch.tanh(x)


def get_inputs():
    return [torch.randn(B, C_IN, {spatial})]


def get_init_inputs():
    return [C_IN, C_OUT]


MTMC = {{"cpu_sizes": {sizes}}}
'''

SPATIAL = {1: "S + 2", 2: "S, S - 2", 3: "S - 2, S - 1, S - 3"}
REDUCTIONS = {
    "min": "torch.min(x, dim=1, keepdim={keepdim})[0]",
    "max": "torch.max(x, dim=1, keepdim={keepdim})[0]",
    "amin": "torch.amin(x, dim=1, keepdim={keepdim})",
    "sum": "torch.sum(x, dim=1, keepdim={keepdim})",
    "mean": "x.mean(dim=1, keepdim={keepdim})",
    "logsumexp": "torch.logsumexp(x, dim=1, keepdim={keepdim})",
}
ONE_SIZE = [{"B": 2, "C_IN": 3, "C_OUT": 5, "S": 7}]


def reduce_task(nd: int, reduction: str, keepdim: bool = True, args: str = "", sizes=None,
                c_out: int = 5) -> Task:
    sizes = sizes or ONE_SIZE
    source = SOURCE.format(nd=nd, args=args, ones=", ".join(["1"] * nd), spatial=SPATIAL[nd], sizes=sizes,
                           defaults=f"2, 3, {c_out}, 7", reduction=reduction.format(keepdim=keepdim))
    return Task(name=f"conv{nd}d_reduce", source=source)


def kernels(program: Program) -> list:
    return ProgramIR.from_dict(program.metadata["template_ir"]).kernels()


def ieee_port(task: Task) -> Program:
    """The port at fp32 precision (the conv ports on TF32): checked at fp32 tolerance."""
    return coder.apply(task, coder.apply(task, None, PORT), Strategy.parse("precision ieee"))


def fused(task: Task, program: Program) -> Program:
    while FUSE in coder.legal_strategies(task, program):
        program = coder.apply(task, program, FUSE)
    return program


def assert_one_reducing_conv(program: Program, reduction: str) -> None:
    (conv,) = kernels(program)
    assert conv.kind == "conv"
    kind = {"amin": "min", "logsumexp": "sum"}.get(reduction, reduction)
    assert kind in conv.op_names() and "tanh" in conv.op_names()
    assert [o.dims for o in conv.outputs] == [[0, *range(2, len(conv.space["traced"]))]]
    assert "axis=1, keep_dims=True" in program.source


@pytest.mark.parametrize("keepdim", [True, False])
@pytest.mark.parametrize("reduction", sorted(REDUCTIONS))
def test_conv2d_channel_reduction_fuses_into_one_kernel_and_matches(reduction, keepdim, tmp_path):
    task = reduce_task(2, REDUCTIONS[reduction], keepdim, args=", padding=1")
    port = ieee_port(task)
    assert [k.kind for k in kernels(port)][-2:] == ["reduce", "pointwise"]
    program = fused(task, port)
    assert_one_reducing_conv(program, reduction)
    check(task, program, tmp_path)


@pytest.mark.parametrize("keepdim", [True, False])
@pytest.mark.parametrize("reduction", ["max", "sum", "mean", "logsumexp"])
def test_conv1d_channel_reduction_fuses_and_matches(reduction, keepdim, tmp_path):
    task = reduce_task(1, REDUCTIONS[reduction], keepdim, args=", stride=2")
    program = fused(task, ieee_port(task))
    assert_one_reducing_conv(program, reduction)
    check(task, program, tmp_path)


def test_conv3d_channel_min_fuses_and_matches(tmp_path):
    task = reduce_task(3, REDUCTIONS["min"], False, args=", padding=(1, 0, 1)")
    program = fused(task, ieee_port(task))
    assert_one_reducing_conv(program, "min")
    check(task, program, tmp_path)
