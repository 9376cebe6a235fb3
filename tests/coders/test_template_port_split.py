"""The port splits a reduction that few programs would run (lower/reduce.py port_split, configs.py
SPLIT_PROGRAMS / SPLIT_SLICE / SPLIT_MIN) and the split program matches PyTorch on the CPU interpreter.

Each task's declared shape is its checked shape, odd sizes throughout: the slices end part-way through
a chunk and the combine kernel's last tile of slices is part masked (14 and 37 slices, 16 and 32 a tile).
"""

from __future__ import annotations

import pytest

from coders.template.emit.reduce_launch import COMBINE_SLICES
from coders.template.ir import ProgramIR
from coders.template.lower.configs import SPLIT_MIN, SPLIT_PROGRAMS, SPLIT_SLICE
from mtmc.strategies import PORT, Strategy
from mtmc.tasks import Task
from tests.coders.test_template import check, coder

SOURCE = '''
import torch
import torch.nn as nn
import torch.nn.functional as F

SHAPE = {shape}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(SHAPE[1:])

    def forward(self, x, y):
        return {forward}


def get_inputs():
    return [torch.randn(SHAPE), torch.rand(SHAPE) + 0.1]


def get_init_inputs():
    return []


MTMC = {{"cpu_sizes": [{{"SHAPE": {shape}}}]}}
'''


def task_of(forward: str, shape: tuple) -> Task:
    return Task(name="split_case", source=SOURCE.format(shape=shape, forward=forward))


def splits(program) -> dict[str, int]:
    ir = ProgramIR.from_dict(program.metadata["template_ir"])
    return {k.name: k.config.get("split_k", 1) for k in ir.kernels() if k.kind == "reduce"}


# (forward, shape, the split the port gives its one reduction)
SPLIT = [
    # the Frobenius norm's form: a full reduction, 231000 values in 14 slices (SPLIT_SLICE each at least)
    ("x / torch.norm(x, p='fro')", (3, 1000, 77), 3 * 1000 * 77 // SPLIT_SLICE),
    # MSE (a mean of everything, its elementwise part a kernel before it): 37 slices, two combine tiles
    ("torch.mean((x - y) ** 2)", (8, 300, 257), 8 * 300 * 257 // SPLIT_SLICE),
    # KL divergence, batchmean: sum then divide by a scalar the combine kernel reads
    ("F.kl_div(torch.log(y), x.softmax(-1), reduction='batchmean')", (5, 40001), 5 * 40001 // SPLIT_SLICE),
    # few rows of a max and of a mean over two dims (keepdim): 5 rows, 77357 values a row
    ("x.amax(dim=(1, 2))", (5, 301, 257), 4),
    ("x.mean(dim=(1, 2), keepdim=True)", (5, 301, 257), 4),
    # a column reduction over 20000 rows of 70 columns: two column blocks of BLOCK_N 64, 78 slices each
    ("x.sum(0)", (20000, 70), 20000 * 64 // SPLIT_SLICE),
]


@pytest.mark.parametrize("forward, shape, split", SPLIT, ids=["fro", "mse", "kl", "amax", "mean", "column"])
def test_the_port_splits_long_reductions_of_few_rows(forward, shape, split, tmp_path):
    task = task_of(forward, shape)
    program = coder.apply(task, None, PORT)
    got = [s for s in splits(program).values() if s > 1]
    assert got == [split] and split >= SPLIT_MIN
    assert "_combine_kernel" in program.source
    check(task, program, tmp_path)


def test_a_split_of_more_slices_than_a_combine_tile_walks_several_tiles(tmp_path):
    """A mean of everything over 2 x 2000 x 2100 values: SPLIT_PROGRAMS slices, read 32 at a time."""
    task = task_of("x.mean()", (2, 2000, 2100))
    program = coder.apply(task, None, PORT)
    assert list(splits(program).values()) == [SPLIT_PROGRAMS] and SPLIT_PROGRAMS > COMBINE_SLICES
    assert f"SLICES={COMBINE_SLICES}" in program.source
    check(task, program, tmp_path)


@pytest.mark.parametrize("forward, shape", [
    ("x.sum(-1)", (300, 20000)),  # rows enough for SPLIT_PROGRAMS programs
    ("x.sum()", (3, 10000)),  # 30000 values: one slice of SPLIT_SLICE... two at most
    ("x.sum(-1)", (5, 40000)),  # 2 slices of a row: fewer than SPLIT_MIN
    # full-size outputs after dependent passes (the online max and sum); a LayerNorm of few long rows
    # splits as a normalization (test_template_norm_split.py)
    ("x.softmax(-1)", (2, 77357)),
], ids=["many_rows", "short", "two_slices", "softmax"])
def test_the_port_keeps_one_program_a_row(forward, shape):
    program = coder.apply(task_of(forward, shape), None, PORT)
    assert set(splits(program).values()) == {1}


def test_a_split_port_goes_back_to_one_program_a_row_and_fuses_either_way(tmp_path):
    """`split_k 1` undoes the port's split; a full-size epilogue (x / norm) fuses into the split
    reduction too, which then is a split normalization (statistics and normalize kernels,
    emit/reduce_norm_split.py): the split stays."""
    task = task_of("x / torch.norm(x, p='fro')", (3, 1000, 77))
    program = coder.apply(task, None, PORT)
    assert Strategy.parse("fuse epilogue") in coder.legal_strategies(task, program)
    fused = coder.apply(task, program, Strategy.parse("fuse epilogue"))
    assert list(splits(fused).values()) == [3 * 1000 * 77 // SPLIT_SLICE]
    assert "_stats_kernel" in fused.source and "_combine_kernel" not in fused.source
    check(task, fused, tmp_path)
    program = coder.apply(task, program, Strategy.parse("split_k 1"))
    assert set(splits(program).values()) == {1}
    assert Strategy.parse("fuse epilogue") in coder.legal_strategies(task, program)


def test_a_split_port_takes_its_elementwise_prologue(tmp_path):
    """MSE: (x - y) ** 2 fuses into the split mean's partial kernel; the split stays."""
    task = task_of("torch.mean((x - y) ** 2)", (8, 300, 257))
    program = coder.apply(task, coder.apply(task, None, PORT), Strategy.parse("fuse prologue"))
    assert list(splits(program).values()) == [8 * 300 * 257 // SPLIT_SLICE]
    defs = [line for line in program.source.splitlines() if line.startswith("def _")]
    assert len(defs) == 3  # the partial and combine kernels and their launcher
    check(task, program, tmp_path)


# KernelBench's 98_KLDivLoss in small, its targets with exact zeros (xlogy(0, 0) = 0, as PyTorch has it)
KL_DIV = '''
import torch
import torch.nn as nn
import torch.nn.functional as F

SHAPE = (5, 40001)


class Model(nn.Module):
    def forward(self, predictions, targets):
        return F.kl_div(torch.log(predictions), targets, reduction="batchmean")


def get_inputs():
    targets = torch.rand(SHAPE).softmax(-1)
    return [torch.rand(SHAPE).softmax(-1), torch.where(torch.rand(SHAPE) < 0.3, 0.0, targets)]


def get_init_inputs():
    return []
'''


def test_batchmean_kl_div_takes_its_elementwise_prologue(tmp_path):
    """The batch size is read off an input (targets.shape[0]), not off the elementwise kernel's
    output, so `fuse prologue` can drop that output: one pass reads predictions and targets once,
    then the combine divides by the batch size."""
    task = Task(name="kl_case", source=KL_DIV)
    port = coder.apply(task, None, PORT)
    assert "kl_div_batch = targets.shape[0]" in port.source
    assert Strategy.parse("fuse prologue") in coder.legal_strategies(task, port)
    check(task, port, tmp_path, "port")
    program = coder.apply(task, port, Strategy.parse("fuse prologue"))
    assert list(splits(program).values()) == [5 * 40001 // SPLIT_SLICE]
    defs = [line for line in program.source.splitlines() if line.startswith("def _")]
    assert len(defs) == 3  # the partial and combine kernels and their launcher
    assert program.source.count("tl.store(") == 2  # the partials and the loss: no elementwise tensor
    inputs = task.make_inputs(seed=1, sizes=task.sizes("cpu")[0])
    assert (inputs[1] == 0).any()  # the zeros the check below runs with (its first size, seed 1)
    check(task, program, tmp_path)
