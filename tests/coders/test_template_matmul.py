"""The template's matmul emitter: TMA tile loads in 16-bit 2-D GEMMs, and the memory order
fp32 dots want for B. CPU interpreter (tests/conftest.py), whose TMA descriptors behave like the
GPU's: zero-filled past the edges, 16-byte aligned rows only."""

from __future__ import annotations

import pytest
import torch

from coders.template import TemplateCoder
from mtmc.strategies import PORT, Strategy
from mtmc.tasks import load_task
from tests.coders.test_template import check_module, import_program

coder = TemplateCoder()

# K and N multiples of 8 halves (16-byte rows): TMA; odd ones: the pointer-load fallback
MATMUL_SIZES = [{"M": 61, "N": 40, "K": 72}, {"M": 29, "N": 83, "K": 47}]
LINEAR_SIZES = [{"batch": 61, "in_features": 80, "out_features": 37, "dtype": torch.float16},
                {"batch": 29, "in_features": 45, "out_features": 91, "dtype": torch.float16}]


def build(name: str, steps: list[str]):
    task = load_task(name)
    program = coder.apply(task, None, PORT)
    for text in steps:
        step = Strategy.parse(text)
        assert step in coder.legal_strategies(task, program), text
        program = coder.apply(task, program, step)
    return task, program


@pytest.mark.parametrize("name, sizes, steps", [
    ("matmul_fp16", MATMUL_SIZES, []),
    ("linear_bias_bf16", LINEAR_SIZES, ["autotune"]),
    ("matmul_fp16", MATMUL_SIZES, ["persistent"]),
    ("matmul_fp16", MATMUL_SIZES, ["group_m 8", "autotune", "persistent"]),
    ("linear_bias_bf16", LINEAR_SIZES, ["autotune", "persistent"]),
])
def test_16bit_gemm_loads_tiles_with_tma_where_rows_are_aligned(name, sizes, steps, tmp_path, monkeypatch):
    task, program = build(name, steps)
    assert "a_desc.load(" in program.source and "TensorDescriptor.from_tensor(" in program.source
    module = import_program(program.source, tmp_path, name)
    made = []
    real = module.TensorDescriptor.from_tensor
    monkeypatch.setattr(module.TensorDescriptor, "from_tensor",
                        lambda t, block: made.append(tuple(t.shape)) or real(t, block))
    for i, size in enumerate(sizes):
        made.clear()
        check_module(task, module, [size])
        assert bool(made) == (i == 0), f"TMA used at {size}: {made}"  # only the aligned size


def test_tma_ready_wants_16_byte_rows_and_offsets():
    _, program = build("matmul_fp16", ["persistent"])
    namespace: dict = {}
    exec(compile(program.source.split("\n\n\n@triton")[0], "prelude", "exec"), namespace)
    ready = namespace["_tma_ready"]
    x = torch.zeros(16, 72, dtype=torch.float16)
    assert ready(x, torch.zeros(72, 40, dtype=torch.float16))
    assert not ready(x, torch.zeros(72, 47, dtype=torch.float16))  # 94-byte rows
    assert not ready(x[:, 1:65], torch.zeros(64, 40, dtype=torch.float16))  # offset by 2 bytes


def test_fp32_batched_and_split_k_gemms_keep_pointer_loads():
    for name, steps in [("matmul_fp32", ["persistent"]), ("bmm_softmax_fp16", []),
                        ("matmul_large_k_fp16", ["split_k 4"])]:
        _, program = build(name, steps)
        assert "TensorDescriptor" not in program.source, name


@pytest.mark.parametrize("name, sizes, steps, order", [
    ("matmul_fp32", [{"M": 61, "N": 37, "K": 89}], [], "k"),
    ("linear_relu_scale_residual", [{"batch": 61, "in_features": 37, "out_features": 83}],
     ["precision ieee"], "n"),
    ("linear_relu_scale_residual", [{"batch": 61, "in_features": 37, "out_features": 83}], [], None),
    ("matmul_fp32", [{"M": 61, "N": 37, "K": 89}], ["precision ieee"], None),
])
def test_fp32_dots_read_b_in_the_order_their_precision_wants(name, sizes, steps, order, tmp_path):
    """tf32x3 (tensor cores, the port's) reads B K-major, ieee (FMA) N-major: B is copied only when
    its order differs, and the answer is the same either way. A Linear's weight is K-major as stored:
    its tf32x3 port copies nothing per call."""
    task, program = build(name, steps)
    assert f'input_precision="{"ieee" if steps else "tf32x3"}"' in program.source
    copies = program.source.count(".t().contiguous().t()")
    assert copies == (order is not None)
    if order == "k":
        assert "K-major" in program.source
    if order == "n":
        assert "N-major" in program.source
    check_module(task, import_program(program.source, tmp_path, f"{name}_{order}"), sizes)
