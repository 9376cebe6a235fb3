"""The port's split-K: few output tiles and a long K split the reduction (lower/matmul.py
port_split_k), in the CPU interpreter at odd sizes (K not a multiple of BLOCK_K, rows and columns
past the tile edges), fp32 at tf32x3, against PyTorch."""

from __future__ import annotations

import pytest

from coders.template import TemplateCoder
from coders.template.ir import ProgramIR
from coders.template.lower.configs import MATMUL_CONFIG, MATMUL_CONFIG_16
from coders.template.lower.matmul import port_split_k
from mtmc.program import Program
from mtmc.strategies import PORT, Strategy
from mtmc.tasks import Task
from tests.coders.test_template import check

coder = TemplateCoder()

HEAD = "import torch\nimport torch.nn as nn\n\n"
MM = HEAD + '''M, K, N = 64, 16384, 64


class Model(nn.Module):
    def forward(self, a, b):
        return a @ b


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []


MTMC = {"cpu_sizes": [{"M": 37, "K": 4099, "N": 45}]}
'''
LINEAR = HEAD + '''B, D, H = 64, 16384, 64


class Model(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.fc = nn.Linear(d, h)

    def forward(self, x):
        return torch.relu(self.fc(x)) * 0.5


def get_inputs():
    return [torch.randn(B, D)]


def get_init_inputs():
    return [D, H]


MTMC = {"cpu_sizes": [{"B": 37, "D": 4099, "H": 45}]}
'''
BMM = HEAD + '''B, M, K, N = 2, 32, 16384, 32


class Model(nn.Module):
    def forward(self, a, b):
        return torch.bmm(a, b) * 0.125


def get_inputs():
    return [torch.randn(B, M, K), torch.randn(B, K, N)]


def get_init_inputs():
    return []


MTMC = {"cpu_sizes": [{"B": 3, "M": 37, "K": 4099, "N": 45}]}
'''


def _matmul_configs(program: Program) -> list[dict]:
    return [k.config for k in ProgramIR.from_dict(program.metadata["template_ir"]).kernels()
            if k.kind == "matmul"]


@pytest.mark.parametrize("name, source", [("mm_long_k", MM), ("linear_long_k", LINEAR), ("bmm_long_k", BMM)])
def test_few_tiles_and_a_long_k_port_split_and_match_pytorch(name, source, tmp_path):
    """One or two 64x64 tiles, K = 16384 traced: 4 slices (each keeps 4096 of K); run at 37 x 4099
    x 45. The split kernel reads B as stored (no per-call copy; a Linear's weight is K-major)."""
    task = Task(name=name, source=source)
    program = coder.apply(task, None, PORT)
    assert [c["split_k"] for c in _matmul_configs(program)] == [4]
    assert "SPLIT_K=4" in program.source and 'input_precision="tf32x3"' in program.source
    assert ".contiguous().t" not in program.source and ".contiguous().transpose" not in program.source
    check(task, program, tmp_path)
    legal = coder.legal_strategies(task, program)
    assert {"split_k 1", "split_k 2", "split_k 8"} <= {str(s) for s in legal}
    assert Strategy.parse("split_k 4") not in legal  # the port's: no change
    unsplit = coder.apply(task, program, Strategy.parse("split_k 1"))
    assert "SPLIT_K" not in unsplit.source
    assert Strategy.parse("autotune") in coder.legal_strategies(task, unsplit)


def test_port_split_rule():
    fp32, half = dict(MATMUL_CONFIG), dict(MATMUL_CONFIG_16)
    assert port_split_k(1, 256, 256, 524288, fp32) == 32  # KernelBench 6_: 16 tiles -> 512 programs
    assert port_split_k(1, 256, 256, 16384, fp32) == 4  # each slice keeps 4096 of K
    assert port_split_k(1, 256, 256, 8191, fp32) == 1  # two slices would be shorter than 4096
    assert port_split_k(1, 2048, 2048, 131072, half) == 1  # 256 tiles of 128x128 (matmul_large_k_fp16)
    assert port_split_k(1, 1024, 8192, 8192, fp32) == 1  # level-2 Linear: 2048 tiles
    assert port_split_k(1, 64, 64, 1 << 24, fp32) == 64  # at most 64
