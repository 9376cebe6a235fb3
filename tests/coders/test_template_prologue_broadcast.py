"""Prologues whose operands span part of a reduce kernel's axes (emit/reduce_layout.py spread addresses):
HingeLoss's targets, one dim of a full mean's flattened columns, fuse into the mean, split or not; a
per-channel weight of a middle dim fuses into row, full, column and split reductions. Each program is
checked against PyTorch on the CPU interpreter at odd sizes, and at batch 1, where HingeLoss's targets
hold a single value for every column (emit/pointwise.py spread_single_value, the reduce launcher too)."""

from __future__ import annotations

import pytest

from coders.template import TemplateCoder
from coders.template.ir import ProgramIR
from mtmc.strategies import PORT, Strategy
from mtmc.tasks import Task
from tests.coders.test_template import check_module, import_program, task_from_source

coder = TemplateCoder()
FUSE = Strategy.parse("fuse prologue")

# KernelBench's 100_HingeLoss in small: targets (batch,) against predictions (batch, COLS)'s last dim
HINGE = '''
import torch
import torch.nn as nn

batch_size = 37
COLS = {cols}


class Model(nn.Module):
    def forward(self, predictions, targets):
        return torch.mean(torch.clamp(1 - predictions * targets, min=0))


def get_inputs():
    return [torch.randn(batch_size, COLS), torch.randint(0, 2, ({targets},)).float() * 2 - 1]


def get_init_inputs():
    return []
'''

# x (B, C, L) and a per-channel w (C,), a per-batch v (B,)
CHANNELS = '''
import torch
import torch.nn as nn

B, C, L = 3, 5, 37


class Model(nn.Module):
    def forward(self, x, w, v):
        return {forward}


def get_inputs():
    return [torch.randn(B, C, L), torch.rand(C) + 0.5, torch.rand(B) + 0.5]


def get_init_inputs():
    return []
'''


def kernels(program) -> list:
    return ProgramIR.from_dict(program.metadata["template_ir"]).kernels()


def fused(task: Task, steps: tuple[str, ...] = ()):
    """The port with its prologue fused (one reduce kernel left), then `steps`."""
    program = coder.apply(task, None, PORT)
    assert FUSE in coder.legal_strategies(task, program)
    program = coder.apply(task, program, FUSE)
    for step in steps:
        program = coder.apply(task, program, Strategy.parse(step))
    assert [k.kind for k in kernels(program)] == ["reduce"]
    return program


@pytest.mark.parametrize("steps", [(), ("split_k 4",)], ids=["one_program", "split"])
def test_hinge_loss_fuses_into_its_mean(steps, tmp_path):
    """targets span dim 1 of the full mean's columns (dims 0 and 1): read at cols % span_1_2. At batch
    1 (predictions (1, 37), targets (1,)) the launcher spreads the one value over the 37 columns."""
    task = task_from_source(tmp_path, "hinge_mean", HINGE.format(cols="batch_size", targets="batch_size"))
    program = fused(task, steps)
    assert "targets_ptr + cols % span_1_2" in program.source
    assert ("_combine_kernel" in program.source) == bool(steps)
    module = import_program(program.source, tmp_path, "hinge")
    check_module(task, module, [{"batch_size": 37}, {"batch_size": 1}])


def test_hinge_loss_fuses_into_the_ports_split_mean(tmp_path):
    """37 x 20011 values: the port splits the mean (45 slices); the prologue joins its partial kernel."""
    task = task_from_source(tmp_path, "hinge_long", HINGE.format(cols=20011, targets="COLS"))
    program = fused(task)
    assert kernels(program)[0].config["split_k"] == 37 * 20011 // 16384
    check_module(task, import_program(program.source, tmp_path, "hinge_long"), [{}])


CASES = [
    # rows (b, c): a row tail, as before (n_tail); split, a spread address (row % span_1_2)
    ("(x * w[None, :, None]).sum(dim=-1)", (), "(row % n_tail)"),
    ("(x * w[None, :, None]).sum(dim=-1)", ("rows 1", "split_k 4"), "row % span_1_2"),
    # rows (b, c), the per-batch v spans their first dim
    ("(x * v[:, None, None]).sum(dim=-1)", (), "row // span_1_2"),
    # a full sum: w spans the middle of the flattened columns
    ("(x * w[None, :, None]).sum()", (), "(cols // span_2_3) % span_1_2"),
    ("(x * w[None, :, None]).sum()", ("split_k 4",), "(cols // span_2_3) % span_1_2"),
    # a column reduction over (b, c), inner l: w spans the second of its reduced rows
    ("(x * w[None, :, None]).sum(dim=(0, 1))", (), "rows % span_1_2"),
    ("(x * w[None, :, None]).sum(dim=(0, 1))", ("split_k 4",), "rows % span_1_2"),
    # a split mean over (c, l) of rows b (w spans the first of the columns' dims), each value scaled
    # by its channel's w and its batch's v
    ("(x * w[None, :, None] * v[:, None, None]).mean(dim=(1, 2))", ("rows 1", "split_k 4"),
     "cols // span_2_3"),
]


@pytest.mark.parametrize("forward, steps, address", CASES)
def test_a_per_channel_operand_fuses_into_reductions(forward, steps, address, tmp_path):
    task = task_from_source(tmp_path, "channels", CHANNELS.format(forward=forward))
    program = fused(task, steps)
    assert address in program.source
    check_module(task, import_program(program.source, tmp_path, "channels"), [{}, {"B": 2, "C": 4, "L": 129}])


def test_a_per_channel_epilogue_after_a_column_mean(tmp_path):
    """A mean over dim 2 of (b, c, d, l) then a (1, c, 1, 1) bias (KernelBench level-2 13_'s mean and add):
    the bias spans part of the column kernel's outer dims, in the one-program and the split forms (the
    combine kernel reads it at (offs // span_3_4) % span_1_2)."""
    source = CHANNELS.replace("B, C, L = 3, 5, 37", "B, C, D, L = 3, 5, 33, 7").replace(
        "torch.randn(B, C, L)", "torch.randn(B, C, D, L)").replace(
        "torch.rand(C) + 0.5", "torch.rand(1, C, 1, 1)")
    task = task_from_source(tmp_path, "mean_bias", source.format(forward="x.mean(dim=2, keepdim=True) + w"))
    program = coder.apply(task, None, PORT)
    program = coder.apply(task, program, Strategy.parse("fuse epilogue"))
    assert [k.kind for k in kernels(program)] == ["reduce"]
    assert "outer % span_1_2" in program.source
    check_module(task, import_program(program.source, tmp_path, "mean_bias"), [{}])
    split = coder.apply(task, program, Strategy.parse("split_k 4"))
    assert "(offs // span_3_4) % span_1_2" in split.source
    check_module(task, import_program(split.source, tmp_path, "mean_bias_split"), [{}])


def test_the_heuristic_planner_fuses_the_hinge_loss_before_vectorizing(tmp_path):
    """The port's dominant kernel is the pointwise one (vectorize on the menu); the generic fuse wish
    comes first, so the full-size clamp's round trip goes before any knob is tuned."""
    from mtmc.protocols import PlanState
    from mtmc.tasks.summary import summarize
    from planners.heuristic import HeuristicPlanner

    task = task_from_source(tmp_path, "hinge_mean", HINGE.format(cols="batch_size", targets="batch_size"))
    program = coder.apply(task, None, PORT)
    legal = coder.legal_strategies(task, program)
    assert Strategy.parse("vectorize") in legal
    state = PlanState(task=task, summary=summarize(task), program=program, verdict=None, legal=legal,
                      steps_left=10)
    assert HeuristicPlanner().propose(state) == FUSE
