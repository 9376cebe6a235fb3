"""The forward conv's epilogue on the transposed tile (config "epilogue_t", emit/conv_epilogue.py; off
in the port) against PyTorch, for every K loop that shares the epilogue: taps (channels last and
NC*), flat, fma, runs, and the direct (depthwise) form.

CPU interpreter, tiny odd sizes, 16 x 16 x 16 tiles: the geometries of test_template_conv.py (stride,
padding, dilation, groups, bias, 1d / 2d / 3d) and a few with 19-20 output channels (per group), so
a program holds several channel blocks, the last partly masked; the fused epilogues of the conv test
tasks (bias, scale, ReLU and a residual input; eval BatchNorm; fp16 grouped 3-D with a clamp;
depthwise with a SiLU). A pool or a channel reduction in the epilogue ignores the key.
"""

from __future__ import annotations

import pytest

from coders.template.emit.module import generate
from coders.template.ir import ProgramIR
from mtmc.program import Program
from mtmc.strategies import PORT
from mtmc.tasks import load_task
from tests.coders.conv_fusion import fused, ieee_port
from tests.coders.test_template import check, check_module, import_program
from tests.coders.test_template_conv import GEMM_GEOMETRIES, GROUPED, TASKS, coder, geometry_task
from tests.coders.test_template_conv_pool import pool_task
from tests.coders.test_template_conv_reduce import REDUCTIONS, reduce_task
from tests.coders.test_template_conv_runs import RUNS

TILES = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16}
IEEE = {"precision": "ieee", "tf32_round": False}
LOOPS = {
    "taps-cl": {"k_loop": "taps", "channels_last": True, **IEEE},
    "taps-nc": {"k_loop": "taps", "channels_last": False, **IEEE},
    "flat": {"k_loop": "flat", **IEEE},
    "fma": {"k_loop": "fma", "channels_last": False, **IEEE},
    "runs": {"k_loop": "runs", **IEEE},
}
TRANSPOSED = "acc = tl.trans(acc)"
# several channel blocks of 16 (per group): 19 output channels, or 2 groups of 10 and 20
MANY_CHANNELS = [
    (2, 3, "stride=2, padding=1", [{"B": 2, "C_IN": 5, "C_OUT": 19, "S": 7}]),
    (1, 3, "dilation=2, padding=3", [{"B": 2, "C_IN": 3, "C_OUT": 19, "S": 6}]),
    (3, (2, 3, 2), "stride=(1, 2, 1), padding=(1, 0, 1)", [{"B": 1, "C_IN": 4, "C_OUT": 19, "S": 7}]),
    (2, 3, "groups=2, padding=1, dilation=(2, 1)", [{"B": 2, "C_IN": 6, "C_OUT": 40, "S": 7}]),
]
DIRECT = GROUPED[1:] + [(2, 3, "groups=19, padding=1", [{"B": 2, "C_IN": 19, "C_OUT": 19, "S": 7}])]


def transposed(task, **config) -> Program:
    """The port with epilogue_t, 16 x 16 x 16 tiles and `config` on its conv kernel."""
    ir = ProgramIR.from_dict(coder.apply(task, None, PORT).metadata["template_ir"])
    ir.kernels()[0].config.update(TILES, epilogue_t=True, **config)
    return Program(generate(task, ir))


def cases(loop: str) -> list[tuple]:
    geometries = RUNS + MANY_CHANNELS[::2] if loop == "runs" else GEMM_GEOMETRIES + MANY_CHANNELS
    return [(loop, *g) for g in geometries]


@pytest.mark.parametrize("loop, nd, kernel, args, sizes", [c for loop in LOOPS for c in cases(loop)])
def test_each_k_loop_matches_pytorch_on_the_transposed_tile(loop, nd, kernel, args, sizes, tmp_path):
    task = geometry_task(nd, kernel, args, sizes)
    program = transposed(task, **LOOPS[loop])
    assert TRANSPOSED in program.source and "pix_e = (rows % n_pix)[None, :]" in program.source
    check(task, program, tmp_path)


@pytest.mark.parametrize("nd, kernel, args, sizes", DIRECT)
def test_the_direct_form_matches_pytorch_on_the_transposed_tile(nd, kernel, args, sizes, tmp_path):
    task = geometry_task(nd, kernel, args, sizes)
    program = transposed(task)
    assert "chan_e = offs_n[:, None]" in program.source and TRANSPOSED in program.source
    check(task, program, tmp_path)


# (task, loops, an extra size with several channel blocks per group)
FUSED = [
    ("conv2d_bias_relu", list(LOOPS), {"B": 2, "C_IN": 5, "C_OUT": 19, "H": 7, "W": 9}),
    ("conv2d_bn_eval", list(LOOPS), {"B": 1, "C_IN": 4, "C_OUT": 21, "H": 5, "W": 6}),
    ("conv3d_groups_fp16", ["taps-cl", "taps-nc", "flat", "fma"],
     {"B": 1, "C_IN": 4, "C_OUT": 34, "D": 5, "H": 4, "W": 5}),
    ("conv1d_depthwise_same", ["direct"], {"B": 2, "C": 19, "L": 9}),
]


@pytest.mark.parametrize("name, loop, size", [(n, lp, s) for n, loops, s in FUSED for lp in loops])
def test_fused_epilogues_run_on_the_transposed_tile(name, loop, size, tmp_path):
    """bias and a per-channel scale, ReLU and a residual input; eval BatchNorm; a clamp in fp16;
    SiLU after a depthwise conv: operands per channel and full size, addressed on [BLOCK_N, BLOCK_M]."""
    task = load_task(TASKS / f"{name}.py")
    ir = ProgramIR.from_dict(fused(task, ieee_port(task)).metadata["template_ir"])
    [kernel] = ir.kernels()
    config = LOOPS.get(loop, {})
    if kernel.space.get("dtype") == "float16":  # the config's precision is the port's: fp16 dots
        config = {k: v for k, v in config.items() if k != "precision"}
    kernel.config.update(TILES, epilogue_t=True, **config)
    source = generate(task, ir)
    assert TRANSPOSED in source
    check_module(task, import_program(source, tmp_path, f"{name}_{loop}"), task.sizes("cpu") + [size])


@pytest.mark.parametrize("task", [
    pool_task(2, before="bias"),                                    # the pool's running tile
    reduce_task(2, REDUCTIONS["min"], True, args=", padding=1"),   # a reduction over the channels
], ids=["pool", "channel-min"])
def test_a_pool_or_a_channel_reduction_ignores_the_key(task, tmp_path):
    ir = ProgramIR.from_dict(fused(task, ieee_port(task)).metadata["template_ir"])
    [kernel] = ir.kernels()
    kernel.config.update(TILES)
    plain = generate(task, ir)
    kernel.config["epilogue_t"] = True
    assert generate(task, ir) == plain and TRANSPOSED not in plain
    check_module(task, import_program(plain, tmp_path, "ignored"), task.sizes("cpu"))


def test_the_port_keeps_the_tile_as_it_was():
    task = load_task(TASKS / "conv2d_bias_relu.py")
    program = coder.apply(task, None, PORT)
    assert TRANSPOSED not in program.source and "img_e = img[:, None]" in program.source
