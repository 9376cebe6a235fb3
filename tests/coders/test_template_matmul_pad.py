"""fp32 tensor-core (tf32x3) matmuls whose K is misaligned: the launcher zero-pads K in its copies of
A and B (config pad_k, emit/matmul/layout.py k_padding), in the CPU interpreter against PyTorch at
odd sizes; aligned, 16-bit, ieee and split-K programs make no padded copy."""

from __future__ import annotations

import pytest
import torch

from coders.template import TemplateCoder
from coders.template.emit.module import generate
from coders.template.ir import ProgramIR
from mtmc.program import Program
from mtmc.strategies import PORT, Strategy
from mtmc.tasks import Task
from tests.coders.test_template import check_module, import_program

coder = TemplateCoder()
PAD = "torch.nn.functional.pad("

HEAD = "import torch\nimport torch.nn as nn\n\n"
TAIL = '''

def get_init_inputs():
    return {init}


MTMC = {{"cpu_sizes": {sizes}}}
'''


def mm_task(k: int, dtype: str = "float32", sizes: str = "[{}]") -> Task:
    source = HEAD + f'''M, K, N = 37, {k}, 45


class Model(nn.Module):
    def forward(self, a, b):
        return torch.relu(a @ b)


def get_inputs():
    return [torch.randn(M, K, dtype=torch.{dtype}), torch.randn(K, N, dtype=torch.{dtype})]
''' + TAIL.format(init="[]", sizes=sizes)
    return Task(name=f"mm_k{k}_{dtype}", source=source)


def linear_task(k: int, sizes: str = "[{}]") -> Task:
    source = HEAD + f'''B, D, H = 37, {k}, 45


class Model(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.fc = nn.Linear(d, h)

    def forward(self, x):
        return self.fc(x) * 0.5


def get_inputs():
    return [torch.randn(B, D)]
''' + TAIL.format(init="[D, H]", sizes=sizes)
    return Task(name=f"linear_k{k}", source=source)


BMM = Task(name="bmm_k101", source=HEAD + '''B, M, K, N = 3, 37, 101, 45


class Model(nn.Module):
    def forward(self, a, b):
        return torch.bmm(a, b)


def get_inputs():
    return [torch.randn(B, M, K), torch.randn(B, K, N)]
''' + TAIL.format(init="[]", sizes='[{}, {"K": 64}]'))


def _matmul_config(program: Program) -> dict:
    [config] = [k.config for k in ProgramIR.from_dict(program.metadata["template_ir"]).kernels()
                if k.kind == "matmul"]
    return config


def _run(task: Task, program: Program, sizes: list[dict], tmp_path, monkeypatch) -> list[list[tuple]]:
    """Check the program against PyTorch at each size; the shapes padded at each."""
    module = import_program(program.source, tmp_path, task.name)
    real, padded = torch.nn.functional.pad, []

    def pad(x, widths):
        out = real(x, widths)
        padded[-1].append(tuple(out.shape))
        return out
    monkeypatch.setattr(torch.nn.functional, "pad", pad)
    for size in sizes:
        padded.append([])
        check_module(task, module, [size])
    return padded


def test_mm_pads_a_misaligned_k_and_matches_pytorch(tmp_path, monkeypatch):
    """K = 101 (not a multiple of 4 nor of BLOCK_K 32): A (37, 128) and B's K-major copy (45, 128);
    at K = 64 the same program copies B K-major as before and pads nothing."""
    task = mm_task(101)
    program = coder.apply(task, None, PORT)
    assert _matmul_config(program)["pad_k"] is True
    assert 'input_precision="tf32x3"' in program.source and "if K % 32:" in program.source
    padded = _run(task, program, [{}, {"K": 64}, {"K": 100}], tmp_path, monkeypatch)
    assert padded == [[(37, 128), (45, 128)], [], [(37, 128), (45, 128)]]


def test_linear_pads_only_rows_that_are_not_16_byte_aligned(tmp_path, monkeypatch):
    """A Linear's weight is read K-major as stored: padding it copies it per call, so only K % 4 != 0
    pads (in_features 101); in_features 100 (K % 32 != 0 but aligned rows) takes the masked loop."""
    task = linear_task(101)
    program = coder.apply(task, None, PORT)
    assert _matmul_config(program)["pad_k"] is True and "if K % 4:" in program.source
    padded = _run(task, program, [{}, {"D": 100}, {"D": 33}], tmp_path, monkeypatch)
    assert padded == [[(37, 128), (45, 128)], [], [(37, 64), (45, 64)]]
    assert "pad_k" not in _matmul_config(coder.apply(linear_task(100), None, PORT))


def test_bmm_pads_a_misaligned_k(tmp_path, monkeypatch):
    program = coder.apply(BMM, None, PORT)
    padded = _run(BMM, program, [{}, {"K": 64}], tmp_path, monkeypatch)
    assert padded == [[(3, 37, 128), (3, 45, 128)], []]


@pytest.mark.parametrize("steps", [["autotune"], ["persistent"], ["autotune", "persistent"]])
def test_tuned_kernels_pad_to_every_block_k_they_may_take(steps, tmp_path, monkeypatch):
    task = mm_task(101)
    program = coder.apply(task, None, PORT)
    for text in steps:
        step = Strategy.parse(text)
        assert step in coder.legal_strategies(task, program), text
        program = coder.apply(task, program, step)
    assert "if K % 32:" in program.source  # the autotuner's BLOCK_Ks are 16 and 32
    assert _run(task, program, [{}], tmp_path, monkeypatch) == [[(37, 128), (45, 128)]]


def test_aligned_16_bit_ieee_and_split_programs_make_no_padded_copy(tmp_path):
    aligned = coder.apply(mm_task(128), None, PORT)
    assert "pad_k" not in _matmul_config(aligned) and PAD not in aligned.source
    assert aligned.source.count(".t().contiguous().t()") == 1
    half = coder.apply(mm_task(101, "float16"), None, PORT)
    assert "pad_k" not in _matmul_config(half) and PAD not in half.source
    task = mm_task(101)
    ieee = coder.apply(task, coder.apply(task, None, PORT), Strategy.parse("precision ieee"))
    assert PAD not in ieee.source and 'input_precision="ieee"' in ieee.source
    # the launcher ignores pad_k outside tf32 dots: the ieee program is the one an unpadded port gives
    unpadded = ProgramIR.from_dict(ieee.metadata["template_ir"])
    for kernel in unpadded.kernels():
        kernel.config.pop("pad_k", None)
    assert generate(task, unpadded) == ieee.source
    # few tiles and a long K: the port splits K and reads B as stored; unsplit, it pads
    long_k = mm_task(16389, sizes='[{"K": 101}]')
    split = coder.apply(long_k, None, PORT)
    assert _matmul_config(split)["split_k"] == 4 and PAD not in split.source
    unsplit = coder.apply(long_k, split, Strategy.parse("split_k 1"))
    assert "if K % 32:" in unsplit.source
    check_module(long_k, import_program(unsplit.source, tmp_path, "unsplit"), long_k.sizes("cpu"))
