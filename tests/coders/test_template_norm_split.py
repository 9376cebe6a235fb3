"""Split row normalizations (emit/reduce_norm_split.py): a LayerNorm or RMSNorm over few long rows
runs as a statistics kernel and a normalize kernel over (rows, SPLIT) programs, and matches PyTorch
on the CPU interpreter; a normalization over many or short rows keeps today's port.

The forced splits (`tile BLOCK=256`, `split_k 7`) put 3 rows of 5 x 37 x 41 = 7585 values in slices
of 5 chunks: six slices merge, the sixth ends part-way through its last chunk, the seventh is empty.
Each task is checked at a second, smaller size too (the verifier's drawn sizes), where the split the
port chose from the declared shape stays (slices of one chunk, most of them empty).
"""

from __future__ import annotations

import pytest

from coders.template.emit import reduce_split
from coders.template.ir import ProgramIR
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
        self.norm = {module}
        with torch.no_grad():  # an affine that is not the identity
            for p in self.norm.parameters():
                p.copy_(torch.randn(p.shape) * 0.5 + 1.0)

    def forward(self, x):
        return {forward}


def get_inputs():
    return [torch.randn(SHAPE) * 3.0 + 5.0]  # a mean far from 0: E[x^2] - mean^2 would cancel


def get_init_inputs():
    return []


MTMC = {{"cpu_sizes": [{{"SHAPE": {shape}}}, {{"SHAPE": {small}}}]}}
'''

ROWS = (3, 5, 37, 41)
SMALL = (4, 5, 3, 7)


def task_of(module: str, forward: str = "self.norm(x)", shape: tuple = ROWS, small: tuple = SMALL) -> Task:
    return Task(name="norm_split_case", source=SOURCE.format(shape=shape, small=small, module=module,
                                                             forward=forward))


def reduce_kernels(program) -> list:
    return [k for k in ProgramIR.from_dict(program.metadata["template_ir"]).kernels() if k.kind == "reduce"]


def splits(program) -> list[int]:
    return [k.config.get("split_k", 1) for k in reduce_kernels(program)]


def forced(task: Task, *steps: str):
    program = coder.apply(task, None, PORT)
    for step in steps + ("tile BLOCK=256", "split_k 7"):
        program = coder.apply(task, program, Strategy.parse(step))
    return program


NORMS = [
    "nn.LayerNorm(SHAPE[1:])",
    "nn.LayerNorm(SHAPE[1:], elementwise_affine=False, eps=1e-3)",
    "nn.LayerNorm(SHAPE[1:], bias=False, eps=0.1)",
    "nn.RMSNorm(SHAPE[1:], eps=1e-6)",
    "nn.RMSNorm(SHAPE[1:])",  # eps None: the dtype's
]


@pytest.mark.parametrize("module", NORMS, ids=["ln", "ln_plain_eps", "ln_no_bias", "rms", "rms_eps_none"])
def test_a_split_normalization_matches_pytorch(module, tmp_path):
    task = task_of(module)
    program = forced(task)
    assert splits(program) == [7]
    assert "_stats_kernel[(n_rows, 7)]" in program.source and "_combine_kernel" not in program.source
    check(task, program, tmp_path)


def test_a_split_of_short_rows_over_the_last_dims(tmp_path):
    """F.layer_norm over the last two dims: 15 rows of 1517 values, 6 chunks in 7 slices of one."""
    task = task_of("nn.Identity()", "F.layer_norm(x, SHAPE[2:], eps=1e-6)")
    assert splits(forced(task)) == [7]
    check(task, forced(task), tmp_path)


def test_an_epilogue_fuses_into_a_split_normalization(tmp_path):
    """relu(LayerNorm(x)): the relu joins the normalize kernel; the split stays."""
    task = task_of("nn.LayerNorm(SHAPE[1:])", "torch.relu(self.norm(x))")
    program = coder.apply(task, forced(task), Strategy.parse("fuse epilogue"))
    assert splits(program) == [7] and "tl.maximum" in program.source
    assert len([line for line in program.source.splitlines() if line.startswith("def _")]) == 3
    check(task, program, tmp_path)


def test_a_prologue_fuses_into_a_split_normalization(tmp_path):
    """LayerNorm(tanh(x) * 2 + x): both kernels compute the prologue from x; the split stays."""
    task = task_of("nn.LayerNorm(SHAPE[1:])", "self.norm(torch.tanh(x) * 2.0 + x)")
    program = coder.apply(task, forced(task), Strategy.parse("fuse prologue"))
    assert splits(program) == [7] and program.source.count("@triton.jit") == 2
    check(task, program, tmp_path)


def test_the_port_splits_a_layer_norm_of_few_long_rows(tmp_path):
    """2 rows of 301 x 257 = 77357 values: 4 slices of at least SPLIT_SLICE (configs.py)."""
    task = task_of("nn.LayerNorm(SHAPE[1:])", shape=(2, 301, 257), small=(3, 4, 5))
    program = coder.apply(task, None, PORT)
    assert splits(program) == [4]
    check(task, program, tmp_path)


def test_kernelbench_40_layer_norm_shape_ports_split():
    """KernelBench level 1 40_LayerNorm's shape: 16 rows of 64 x 256 x 256 values, 17 slices a row
    (SPLIT_PROGRAMS 264 programs over 16 rows): two kernels of (16, 17) programs."""
    task = task_of("nn.LayerNorm(SHAPE[1:])", shape=(16, 64, 256, 256))
    program = coder.apply(task, None, PORT)
    assert splits(program) == [17]
    assert "_norm_stats_kernel[(n_rows, 17)]" in program.source
    assert "_norm_kernel[(n_rows, 17)]" in program.source and "SLICES=32" in program.source


@pytest.mark.parametrize("module, shape", [
    ("nn.LayerNorm(SHAPE[1:])", (300, 20000)),  # rows enough for SPLIT_PROGRAMS programs
    ("nn.LayerNorm(SHAPE[1:])", (64, 1024)),  # short rows
    ("nn.LayerNorm(SHAPE[1:])", (5, 40000)),  # 2 slices a row: fewer than SPLIT_MIN
    ("nn.RMSNorm(SHAPE[1:])", (512, 4096)),
    ("nn.GroupNorm(2, SHAPE[1])", (2, 4, 300, 300)),  # GroupNorm's rows: not split
], ids=["many_rows", "short_rows", "two_slices", "rms_many_rows", "group_norm"])
def test_other_normalizations_keep_todays_port(module, shape, monkeypatch):
    task = task_of(module, shape=shape)
    program = coder.apply(task, None, PORT)
    assert set(splits(program)) == {1} and "_stats_kernel" not in program.source
    monkeypatch.setattr(reduce_split, "norm_splittable", lambda kernel: False)
    assert coder.apply(task, None, PORT).source == program.source
