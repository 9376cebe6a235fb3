"""Several short rows per reduce program (config ROWS, the `rows` step; emit/reduce_layout.py)
against PyTorch on the CPU interpreter, and the forms that refuse it.

The rows here are 37 columns (not a power of two) and there are 15 of them (a multiple of neither
2 nor 8), so the last tile of each program grid is part masked.
"""

from __future__ import annotations

import pytest

from coders.template.emit.common import FusionError
from coders.template.emit.module import generate
from coders.template.ir import ProgramIR
from coders.template.lower.configs import SHORT_ROW, SHORT_ROWS
from mtmc.protocols import CoderError
from mtmc.strategies import PORT
from mtmc.tasks import Task
from tests.coders.test_template import check, coder, local_task
from tests.coders.test_template_pool import formed, fuse_all, kernels

SOURCE = '''
import torch
import torch.nn as nn
import torch.nn.functional as F

SHAPE = {shape}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(SHAPE[-1])
        with torch.no_grad():  # not the identity, so that a misplaced weight or bias shows
            self.norm.weight.add_(torch.rand(SHAPE[-1]))
            self.norm.bias.add_(torch.rand(SHAPE[-1]))
        self.weight = nn.Parameter(torch.rand(SHAPE[-1]) + 0.5)
        self.tail = nn.Parameter(torch.rand(SHAPE[1], 1) + 0.5)

    def forward(self, x, y):
        return {forward}


def get_inputs():
    return [torch.randn(SHAPE), torch.randn(SHAPE[:-1] + (1,))]


def get_init_inputs():
    return []


MTMC = {{"cpu_sizes": [{{"SHAPE": {shape}}}]}}
'''

SHORT = (5, 3, 37)


def rows_task(forward: str, shape: tuple = SHORT) -> Task:
    return Task(name="rows_case", source=SOURCE.format(shape=shape, forward=forward))


def fused(task: Task, steps: list[str]):
    """The port with every fusion taken, then `steps`."""
    return formed(task, steps, fuse_all(task, coder.apply(task, None, PORT)))


def reduce_kernels(program) -> list:
    return [k for k in kernels(program) if k.kind == "reduce"]


CASES = {
    "layernorm_gelu": "F.gelu(self.norm(x))",
    "softmax": "torch.softmax(x, dim=-1)",
    "log_softmax": "torch.log_softmax(x, dim=-1)",
    "row_sum": "x.sum(-1)",
    "row_mean_keepdim": "x.mean(-1, keepdim=True) * 2.0",
    "rmsnorm": "x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight",
    "per_row_operand": "torch.softmax(x, dim=-1) * y",
    "row_tail": "(x - x.amax(-1, keepdim=True)) * self.tail",
}


@pytest.mark.parametrize("rows", [2, 8])
@pytest.mark.parametrize("name", list(CASES))
def test_rows_per_program_match_pytorch(name, rows, tmp_path):
    task = rows_task(CASES[name])
    program = fused(task, [f"rows {rows}"])
    assert [k.config.get("ROWS") for k in reduce_kernels(program)] == [rows]
    assert "tl.arange(0, ROWS)[:, None]" in program.source and "triton.cdiv(n_rows, ROWS)" in program.source
    check(task, program, tmp_path, tag=f"{name}_{rows}")


def test_a_row_tail_operand_is_read_in_the_tile():
    program = fused(rows_task(CASES["row_tail"]), ["rows 8"])
    assert "(row % n_tail)" in program.source


def test_a_row_longer_than_its_block_falls_back_to_one_row_per_program(tmp_path):
    """A tile step after `rows` makes the row walk chunks: the launcher passes ROWS = 1."""
    task = rows_task(CASES["layernorm_gelu"])
    program = fused(task, ["rows 8", "tile BLOCK=16"])
    assert "ROWS = min(8, max(16384 // BLOCK, 1)) if n_cols <= BLOCK else 1" in program.source
    assert "tl.static_assert(ROWS == 1)" in program.source
    check(task, program, tmp_path, tag="looped")


def test_rows_with_autotune_match_pytorch(tmp_path):
    task = rows_task(CASES["softmax"])
    check(task, formed(task, ["rows 4", "autotune"]), tmp_path, tag="tuned")


def test_the_port_takes_several_short_rows_per_program(tmp_path):
    """Rows of at most SHORT_ROW values start at SHORT_ROWS a program; longer rows at one."""
    task = rows_task(CASES["layernorm_gelu"])
    program = fused(task, [])
    assert [k.config.get("ROWS") for k in reduce_kernels(program)] == [SHORT_ROWS]
    check(task, program, tmp_path, tag="port")
    long = fused(rows_task(CASES["layernorm_gelu"], shape=(2, 3, SHORT_ROW + 1)), [])
    assert [k.config.get("ROWS") for k in reduce_kernels(long)] == [None]
    assert "ROWS" not in long.source


def test_rows_1_is_one_row_per_program():
    task = rows_task(CASES["layernorm_gelu"])
    one = formed(task, ["rows 1"], fused(task, []))
    assert "ROWS" not in one.source and "row = tl.program_id(0).to(tl.int64)" in one.source
    assert formed(task, ["rows 8", "rows 1"], one).source == one.source


def test_the_step_is_on_the_menu_of_short_rows_only():
    short = rows_task(CASES["layernorm_gelu"])
    legal = {str(s) for s in coder.legal_strategies(short, fused(short, []))}
    assert {"rows 1", "rows 4", "rows 64"} <= legal and "rows 16" not in legal  # the port's
    long = rows_task(CASES["layernorm_gelu"], shape=(2, 3, 1500))
    program = fused(long, [])
    assert not any(s.kind == "rows" for s in coder.legal_strategies(long, program))
    with pytest.raises(CoderError, match="at most 1024 columns"):
        formed(long, ["rows 4"], program)


@pytest.mark.parametrize("task, steps, why", [
    (rows_task("x.sum(1)"), ["rows 4"], "column reductions"),
    (local_task("groupnorm"), ["rows 4"], "GroupNorm"),
    (rows_task("x.sum()"), ["rows 4"], "full reduction"),
    (rows_task(CASES["softmax"]), ["rows 1", "persistent", "rows 4"], "persistent"),
    (rows_task(CASES["softmax"]), ["rows 4", "persistent"], "not persistent"),
    (rows_task(CASES["softmax"]), ["rows 3"], "power of two"),
    (rows_task(CASES["softmax"]), ["rows 128"], "power of two"),
], ids=["column", "groupnorm", "full", "persistent_first", "persistent_after", "three", "too_many"])
def test_steps_that_do_not_fit_are_refused(task, steps, why):
    with pytest.raises(CoderError, match=why):
        formed(task, steps)


@pytest.mark.parametrize("forward, config", [
    ("x.sum(1)", {}),  # a column reduction
    ("x.sum()", {}),  # a full reduction: one row
    (CASES["softmax"], {"persistent": True}),
    (CASES["softmax"], {"split_k": 4}),
], ids=["column", "full", "persistent", "split"])
def test_the_emitter_refuses_forms_of_one_row_per_program(forward, config):
    task = rows_task(forward)
    ir = ProgramIR.from_dict(formed(task, []).metadata["template_ir"])
    kernel = next(k for k in ir.kernels() if k.kind == "reduce")
    kernel.config.update(config, ROWS=4)
    with pytest.raises(FusionError, match="one row per program"):
        generate(task, ir)
