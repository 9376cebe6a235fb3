"""The port merges a variance with the mean it centres on (fuse/statistics.py): BatchNorm2d in training
mode ports as one pass of Welford pairs over the (n, c) planes, one over the plane statistics per
channel and the normalizing pass, as `fuse all` made them after the port. Checked against PyTorch on
the CPU interpreter at odd sizes: planes longer than a block (the looped Welford merge, its last chunk
partial), batches over a block of rows (the looped per-channel passes), and a large common offset,
which E[x^2] - mean^2 would cancel (30 with a spread of 0.3: mean^2 is 1e5 times the variance; at 100
with a spread of 0.1 eager fp32 itself is 4e-4 off an fp64 reference, past the 1e-4 tolerance)."""

from __future__ import annotations

import pytest

from coders.template import TemplateCoder, fuse
from coders.template.coder import port
from coders.template.ir import ProgramIR
from coders.template.lower import lower
from coders.template.trace import trace
from mtmc.strategies import PORT, Strategy
from mtmc.tasks import Task
from tests.coders.test_template import check

coder = TemplateCoder()

# KernelBench's 33_BatchNorm in small (training mode: the batch's statistics)
BATCH_NORM = '''
import torch
import torch.nn as nn

B, C, H, W = 37, 3, 5, 7


class Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bn = nn.BatchNorm2d(c)
        nn.init.normal_(self.bn.weight)
        nn.init.normal_(self.bn.bias)

    def forward(self, x):
        return self.bn(x)


def get_inputs():
    return [torch.rand(B, C, H, W) * 3 + 1]


def get_init_inputs():
    return [C]


MTMC = {"cpu_sizes": [{"B": 37, "C": 3, "H": 5, "W": 7}, {"B": 3, "C": 2, "H": 97, "W": 89}]}
'''


def kernels(program) -> list:
    return ProgramIR.from_dict(program.metadata["template_ir"]).kernels()


@pytest.mark.parametrize("offset", ["* 3 + 1", "* 0.3 + 30"])
def test_batch_norm_ports_as_one_pass_of_plane_statistics(offset, tmp_path):
    task = Task(name="bn_case", source=BATCH_NORM.replace("* 3 + 1", offset))
    program = coder.apply(task, None, PORT)
    found = kernels(program)
    assert [k.kind for k in found] == ["reduce", "reduce", "pointwise"], [k.name for k in found]
    assert all([o.op for o in k.body].count("mean") == 2 for k in found[:2])
    assert "Welford per chunk" in program.source  # the looped plane statistics (97 x 89 > a block)
    assert "pass 2 of 2" in program.source  # the per-channel passes over 37 planes (> 32 rows a block)
    assert not any(s.kind == "fuse" for s in coder.legal_strategies(task, program))
    check(task, program, tmp_path)


def test_the_port_is_what_fuse_all_made_of_the_unmerged_statistics():
    task = Task(name="bn_case", source=BATCH_NORM)
    chained = fuse.fuse_chains(lower(trace(task)))
    fused, merges = fuse.fuse_all(chained)
    assert merges == 4
    names = [k.name for k in port(task).kernels()]
    assert names == [k.name for k in fused.kernels()]


# a variance written out (its mean, the centred squares, their mean), and a sum of squares about
# a mean of another tensor (not centred on its own input: left as it is)
ROWS = '''
import torch
import torch.nn as nn

R, N = 5, 301


class Model(nn.Module):
    def forward(self, x, y):
        return {forward}


def get_inputs():
    return [torch.randn(R, N) + 10, torch.randn(R, N)]


def get_init_inputs():
    return []
'''


def test_a_written_out_variance_merges_with_its_mean(tmp_path):
    forward = "((x - x.mean(-1, keepdim=True)) ** 2).mean(-1)"
    task = Task(name="var_case", source=ROWS.format(forward=forward))
    program = coder.apply(task, None, PORT)
    assert [k.kind for k in kernels(program)] == ["reduce"]
    check(task, program, tmp_path)


def test_statistics_of_another_tensor_stay_as_they_are():
    forward = "((y - x.mean(-1, keepdim=True)) ** 2).mean(-1)"
    task = Task(name="other_case", source=ROWS.format(forward=forward))
    chained = fuse.fuse_chains(lower(trace(task)))
    assert fuse.fuse_statistics(chained).to_dict() == chained.to_dict()
    assert Strategy.parse("fuse prologue") in coder.legal_strategies(task, coder.apply(task, None, PORT))
