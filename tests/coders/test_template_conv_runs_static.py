"""The runs loop's constexpr form (config "runs_static", emit/conv_runs.py) and the epilogue's one
division a row (config "split_rows", emit/conv_epilogue.py) against PyTorch on the CPU interpreter at odd
sizes: every runs geometry, a pooling conv, 3-D, and the port taking runs_static."""

from __future__ import annotations

import pytest

from coders.template.emit.module import generate
from coders.template.ir import ProgramIR
from mtmc.program import Program
from tests.coders.test_template import check
from tests.coders.test_template_conv import configured, geometry_task
from tests.coders.test_template_conv_pool import fused, ieee_port, pool_task
from tests.coders.test_template_conv_runs import RUNS, WIDE_RUNS

RUNS_IEEE = {"k_loop": "runs", "precision": "ieee", "tf32_round": False, "BLOCK_M": 16, "BLOCK_N": 16,
             "BLOCK_K": 16}


@pytest.mark.parametrize("nd, kernel, args, sizes", RUNS + WIDE_RUNS)
def test_static_runs_loop_matches_pytorch_at_odd_sizes(nd, kernel, args, sizes, tmp_path):
    task = geometry_task(nd, kernel, args, sizes)
    program = configured(task, **RUNS_IEEE, runs_static=1, split_rows=1)
    assert "CIG_R: tl.constexpr" in program.source and "RUN: tl.constexpr" in program.source
    assert "img_q = offs_m // n_pix" in program.source
    check(task, program, tmp_path)


def test_static_runs_loop_on_tf32_and_a_3d_conv_with_8_channels(tmp_path):
    task = geometry_task(3, 3, "padding=(1, 0, 0)", [{"B": 2, "C_IN": 8, "C_OUT": 17, "S": 10}])
    program = configured(task, k_loop="runs", precision="tf32", tf32_round=True, BLOCK_M=32, BLOCK_N=32,
                         BLOCK_K=16, runs_static=1)
    assert "row_in = " in program.source  # the padded depth keeps the rows' window test
    check(task, program, tmp_path)


def test_an_unpadded_static_runs_loop_drops_the_window_test(tmp_path):
    task = geometry_task(2, 3, "stride=(2, 1)", [{"B": 3, "C_IN": 8, "C_OUT": 5, "S": 9}])
    dynamic = configured(task, **RUNS_IEEE)
    static = configured(task, **RUNS_IEEE, runs_static=1)
    assert "row_in = " in dynamic.source and "row_in = " not in static.source
    check(task, static, tmp_path)


@pytest.mark.parametrize("config", [{"runs_static": 1}, {"split_rows": 1},
                                    {"runs_static": 1, "split_rows": 1}])
def test_a_pooling_conv_takes_either_key(config, tmp_path):
    task = pool_task(2, sizes=[{"B": 2, "C_IN": 5, "C_OUT": 7, "S": 7}])
    ir = ProgramIR.from_dict(fused(task, ieee_port(task)).metadata["template_ir"])
    ir.kernels()[0].config.update(RUNS_IEEE, **config)
    program = Program(generate(task, ir))
    assert "for win in range(0, PK0 * PK1)" in program.source
    check(task, program, tmp_path)


def test_split_rows_on_the_taps_loop(tmp_path):
    task = geometry_task(2, 3, "padding=1", [{"B": 3, "C_IN": 5, "C_OUT": 6, "S": 5}])
    program = configured(task, k_loop="taps", precision="ieee", BLOCK_M=16, BLOCK_N=16, BLOCK_K=16,
                         split_rows=1)
    check(task, program, tmp_path)


def test_the_port_takes_the_static_runs_loop_and_runs_static_0_the_runtime_one(tmp_path):
    task = geometry_task(3, 3, "padding=1", [{"B": 2, "C_IN": 8, "C_OUT": 17, "S": 10}])
    port = configured(task)
    assert port.source.count("CIG_R: tl.constexpr") == 1 and "img_q = offs_m // n_pix" not in port.source
    runtime = configured(task, runs_static=0)
    assert "CIG_R" not in runtime.source
    check(task, port, tmp_path)
