"""The runs K loop of convolutions (emit/conv_runs.py) against PyTorch on the CPU interpreter at odd
sizes: dots over contiguous runs of a window row's taps x channels in a channels-last copy, over the
geometry (stride x padding x dilation of the outer dims x bias, 1d / 2d / 3d) and its refusals."""

from __future__ import annotations

import pytest
import torch

from coders.template.emit.common import FusionError
from coders.template.emit.module import generate
from coders.template.ir import ProgramIR
from mtmc.program import Program
from mtmc.strategies import PORT, Strategy
from tests.coders.test_template import check, import_program
from tests.coders.test_template_conv import GEOMETRIES, coder, configured, geometry_task, kernels

# the GEOMETRIES whose last dim is undilated (a run of taps is contiguous only there)
RUNS = [g for g in GEOMETRIES if "dilation=2," not in g[2] and "dilation=(2, 1))" not in g[2]
        and "dilation=(2, 1, 1)" not in g[2]]
WIDE_RUNS = [  # runs of 3 x 11 and 4 x 7 floats: several K blocks of 16, the last partly masked
    (2, 3, "stride=(2, 1), padding=1", [{"B": 2, "C_IN": 11, "C_OUT": 5, "S": 7}]),
    (1, 4, "padding='same', bias=False", [{"B": 1, "C_IN": 7, "C_OUT": 6, "S": 5}]),
    (3, (2, 3, 2), "stride=(2, 1, 1), padding=(0, 1, 1), dilation=(2, 1, 1)", [{"B": 1, "C_IN": 5, "C_OUT": 3,
                                                                                "S": 8}]),
]


@pytest.mark.parametrize("nd, kernel, args, sizes", RUNS + WIDE_RUNS)
def test_runs_loop_matches_pytorch_at_odd_sizes(nd, kernel, args, sizes, tmp_path):
    task = geometry_task(nd, kernel, args, sizes)
    program = configured(task, k_loop="runs", precision="ieee", tf32_round=False,
                         BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
    assert "RUN = ks_" in program.source and "_cl = " in program.source  # the channels-last copy
    check(task, program, tmp_path)


def test_runs_loop_on_tf32_rounds_in_the_copy_and_stays_within_the_tolerance(tmp_path):
    task = geometry_task(2, 3, "padding=1", [{"B": 2, "C_IN": 3, "C_OUT": 5, "S": 9}])
    program = configured(task, k_loop="runs", precision="tf32", tf32_round=True, BLOCK_M=32, BLOCK_K=16)
    assert "_tf32_pack(" in program.source and 'input_precision="tf32"' in program.source
    check(task, program, tmp_path)


def test_only_a_padded_last_dim_masks_each_element():
    valid = configured(geometry_task(2, 3, "padding=(1, 0)", [{"B": 2, "C_IN": 3, "C_OUT": 5, "S": 9}]),
                       k_loop="runs")
    padded = configured(geometry_task(2, 3, "padding=(0, 1)", [{"B": 2, "C_IN": 3, "C_OUT": 5, "S": 9}]),
                        k_loop="runs")
    assert "i_w = " not in valid.source and "i_w = " in padded.source


def test_a_dilated_last_dim_is_refused_at_emit_and_a_grouped_conv_at_launch(tmp_path):
    dilated = geometry_task(2, 3, "dilation=(1, 2)", [{"B": 2, "C_IN": 3, "C_OUT": 5, "S": 9}])
    with pytest.raises(FusionError, match="dilation"):
        configured(dilated, k_loop="runs")
    grouped = geometry_task(2, 3, "groups=2, padding=1", [{"B": 2, "C_IN": 4, "C_OUT": 6, "S": 9}])
    module = import_program(configured(grouped, k_loop="runs").source, tmp_path, "grouped")
    model = module.ModelNew(*grouped.init_inputs(grouped.sizes("cpu")[0]))
    with pytest.raises(ValueError, match="groups == 1"):
        model(torch.randn(2, 4, 9, 7))


def test_tile_steps_keep_the_runs_loop(tmp_path):
    task = geometry_task(2, 3, "padding=1", [{"B": 2, "C_IN": 3, "C_OUT": 5, "S": 9}])
    port = coder.apply(task, None, PORT)
    ir = ProgramIR.from_dict(port.metadata["template_ir"])
    ir.kernels()[0].config.update(k_loop="runs", precision="ieee", tf32_round=False, BLOCK_K=16)
    program = Program(generate(task, ir), metadata={**port.metadata, "template_ir": ir.to_dict()})
    stepped = coder.apply(task, program, Strategy.make("tile", BLOCK_M=32, BLOCK_N=16, BLOCK_K=32))
    assert kernels(stepped)[0].config["k_loop"] == "runs"
    check(task, stepped, tmp_path)


@pytest.mark.parametrize("args, c_in, c_out, k_loop", [
    ("padding=1", 8, 64, "runs"),                # level 2's 8 -> 64 convs
    ("padding=1", 3, 96, "runs"),                # an RGB input layer
    ("padding=1", 8, 16, "runs"),                # 8 channels fill most of a run's K block of 16
    ("padding=1", 3, 32, "fma"),                 # 3 channels pad it: the FMA loop (conv_runs.MIN_OUT)
    ("padding=1", 8, 8, "fma"),                  # too few output channels for a dot tile
    ("padding=1", 16, 64, "taps"),               # a full channel block: the taps loop
    ("padding=1, dilation=(1, 2)", 8, 64, "fma"),  # a dilated last dim has no contiguous run
    ("padding=1, groups=2", 8, 64, "fma"),       # 4 -> 32 per group; a group is not one run
])
def test_port_takes_the_runs_loop_for_few_input_and_many_output_channels(args, c_in, c_out, k_loop):
    task = geometry_task(2, 3, args, [{"B": 2, "C_IN": c_in, "C_OUT": c_out, "S": 9}])
    (conv,) = kernels(coder.apply(task, None, PORT))
    assert conv.config["k_loop"] == k_loop
    if k_loop == "runs":
        assert conv.config["precision"] == "tf32" and conv.config["tf32_round"]
        assert conv.config["BLOCK_N"] == (64 if c_out >= 64 else 32)


def test_the_ported_runs_loop_matches_pytorch(tmp_path):
    task = geometry_task(2, 3, "stride=2, padding=1", [{"B": 2, "C_IN": 5, "C_OUT": 64, "S": 9}])
    program = coder.apply(task, None, PORT)
    assert "RUN: tl.constexpr = KS_" in program.source  # the port's runs loop is the static one
    check(task, program, tmp_path)
