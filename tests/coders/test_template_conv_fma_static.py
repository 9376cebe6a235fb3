"""The FMA loop's constexpr form (config "fma_static", emit/conv_fma.py) against PyTorch on the CPU
interpreter at odd sizes: every implicit-GEMM geometry (1-D / 2-D / 3-D, stride, padding, 'same',
dilation, groups, 17-40 channels a group), the window tests it keeps, a pooling conv, autotune, and
fma_static=0 (or a transposed conv) leaving the program as it was."""

from __future__ import annotations

import pytest

from coders.template import TemplateCoder
from coders.template.emit.module import generate
from coders.template.ir import ProgramIR
from mtmc.program import Program
from mtmc.strategies import PORT, Strategy
from tests.coders.test_template import check
from tests.coders.test_template_conv import GEMM_GEOMETRIES, configured, geometry_task, kernels
from tests.coders.test_template_conv_fma import OUTER_PRODUCT, transpose_task
from tests.coders.test_template_conv_pool import fused, ieee_port, pool_task

coder = TemplateCoder()
FMA = {"k_loop": "fma", "precision": "ieee", "channels_last": False, "tf32_round": False,
       "BLOCK_M": 16, "BLOCK_N": 16}


@pytest.mark.parametrize("nd, kernel, args, sizes", GEMM_GEOMETRIES)
def test_static_fma_loop_matches_pytorch_at_odd_sizes(nd, kernel, args, sizes, tmp_path):
    """16 x 16 tiles: several row and column tiles, wrapped rows and columns; the geometries with two
    sizes compile once per channel count (3 and 4)."""
    task = geometry_task(nd, kernel, args, sizes)
    program = configured(task, **FMA, fma_static=1)
    source = program.source
    assert "CIG_F: tl.constexpr" in source and "tl.static_range(CIG_F)" in source and "CIG_F=CIG" in source
    assert OUTER_PRODUCT in source and "tl.dot" not in source
    assert ("for outer in range(0, " in source) == (nd > 1)  # a 1-D window is all last dim
    check(task, program, tmp_path)


@pytest.mark.parametrize("args, row_in, tap_in", [
    ("padding='valid', stride=(1, 3)", False, False),  # unpadded: no window test at all
    ("stride=(2, 1), padding=(1, 0)", True, False),  # the outer dim pads: one test a row and outer tap
    ("padding=(0, 2), dilation=(1, 2)", False, True),  # the last dim pads: one a row and unrolled tap
    ("padding='same'", True, True),
])
def test_only_a_padded_dim_keeps_its_window_test(args, row_in, tap_in, tmp_path):
    task = geometry_task(2, 3, args, [{"B": 2, "C_IN": 3, "C_OUT": 5, "S": 9}])
    source = configured(task, **FMA, fma_static=1).source
    assert ("row_in = " in source, "tap_in = " in source) == (row_in, tap_in)
    check(task, Program(source), tmp_path)


def test_a_pooling_conv_takes_the_static_fma_loop(tmp_path):
    task = pool_task(3, sizes=[{"B": 2, "C_IN": 3, "C_OUT": 5, "S": 9}])
    ir = ProgramIR.from_dict(fused(task, ieee_port(task)).metadata["template_ir"])
    ir.kernels()[0].config.update(FMA, fma_static=1)
    program = Program(generate(task, ir))
    assert "tl.static_range(CIG_F)" in program.source and "for win in range(0, " in program.source
    check(task, program, tmp_path)


def test_an_autotuned_static_fma_loop_matches_pytorch(tmp_path):
    task = geometry_task(3, (2, 3, 2), "padding=(1, 0, 1)", [{"B": 2, "C_IN": 3, "C_OUT": 5, "S": 9}])
    tuned = coder.apply(task, coder.apply(task, None, PORT), Strategy.parse("autotune"))
    ir = ProgramIR.from_dict(tuned.metadata["template_ir"])
    ir.kernels()[0].config["fma_static"] = 1
    program = Program(generate(task, ir))
    assert "@triton.autotune" in program.source and "KS_d=ks_d" in program.source
    check(task, program, tmp_path)


def test_fma_static_0_the_port_and_a_transposed_conv_leave_the_program_unchanged():
    task = geometry_task(3, 3, "padding=1", [{"B": 2, "C_IN": 3, "C_OUT": 5, "S": 9}])
    port = coder.apply(task, None, PORT)
    assert kernels(port)[0].config["k_loop"] == "fma" and "fma_static" not in kernels(port)[0].config
    assert configured(task, fma_static=0).source == port.source
    transpose = transpose_task("conv_transpose_3d", 4)
    ir = ProgramIR.from_dict(coder.apply(transpose, None, PORT).metadata["template_ir"])
    plain = generate(transpose, ir)
    ir.kernels()[0].config["fma_static"] = 1
    assert OUTER_PRODUCT in plain and generate(transpose, ir) == plain
