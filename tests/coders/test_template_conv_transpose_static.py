"""The transposed conv's constexpr live-tap loop (config "transpose_static", emit/conv_transpose_static.py)
against PyTorch on the CPU interpreter at odd sizes: 1-D / 2-D / 3-D, stride, padding, output_padding,
dilation, groups, with and without bias (test_template_conv_transpose_live.py's geometries), through the
dot loop (TF32 on the rounded channels-last copy, ieee on NC*) and the FMA loop; whole and partial
channel blocks, a fused epilogue, autotune, and the key off (or on another loop) leaving the program
as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from coders.template import TemplateCoder
from coders.template.emit.module import generate
from coders.template.ir import ProgramIR
from mtmc.strategies import PORT, Strategy
from tests.coders.test_template import check_module, import_program
from tests.coders.test_template_conv_transpose import task_named
from tests.coders.test_template_conv_transpose_live import (
    CASES,
    LIVE_LOOP,
    LOOPS,
    SIZES,
    TILES,
    case_id,
    configured_programs,
)

coder = TemplateCoder()
STATIC = {name: {**LOOPS[name], "transpose_static": 1} for name in ("tf32-cl", "ieee-nc", "fma")}
CONSTEXPRS = ("cin_g: tl.constexpr", "cout_g: tl.constexpr", "ks0: tl.constexpr", "st0: tl.constexpr",
              "pad0: tl.constexpr", "dil0: tl.constexpr", "tst0: tl.constexpr", "tinv0: tl.constexpr")


@pytest.fixture(scope="module")
def programs(tmp_path_factory) -> dict:
    """(task name, loop) -> (task, imported program with the key on)."""
    return configured_programs(tmp_path_factory, STATIC)


@pytest.mark.parametrize("loop", list(STATIC))
@pytest.mark.parametrize("name, case", [(n, c) for n, cases in CASES.items() for c in cases], ids=case_id)
def test_static_loop_matches_pytorch_over_the_geometry(name, case, loop, programs):
    """18 input channels a group (36, 2 groups) or 36: partial channel blocks of 16, and steps that
    cross live taps; a phase no tap reaches keeps its bias; dilations 2 and 3 give dq > 1."""
    task, module = programs[name, loop]
    check_module(task, module, [{**SIZES[name], **case}])


@pytest.mark.parametrize("name, case", [
    ("conv_transpose_2d", {"KERNEL": (3, 4), "STRIDE": (2, 3), "PADDING": (1, 2), "OUTPUT_PADDING": (1, 0),
                           "DILATION": (1, 2), "GROUPS": 2}),
    ("conv_transpose_3d", {"KERNEL": 3, "STRIDE": 2, "PADDING": 1, "OUTPUT_PADDING": 1, "DILATION": 1,
                           "GROUPS": 1, "D": 3, "H": 2, "W": 3}),
])
@pytest.mark.parametrize("loop", ["tf32-cl", "ieee-nc"])
def test_whole_channel_blocks_drop_the_channel_mask(name, case, loop, programs):
    """32 channels a group: two whole blocks of 16, where the constexpr test folds the mask away."""
    task, module = programs[name, loop]
    groups = case["GROUPS"]
    check_module(task, module, [{**SIZES[name], "C_IN": 32 * groups, "C_OUT": 5 * groups, **case}])


def test_the_static_loop_reads_as_intended(programs):
    """Constexpr geometry, the live tap's counters carried by the loop, no division inside it."""
    for loop in STATIC:
        source = Path(programs["conv_transpose_3d", loop][1].__file__).read_text()
        assert all(c in source for c in CONSTEXPRS + ("st2: tl.constexpr",)), loop
        body = source[source.index("u0 = 0"):source.index("rb = ")]
        assert "u2 += tap_next" in body and "u0 += tap_next" in body and "tl.uint32" in body
        inner = body[body.index("for "):]  # the loop
        assert "//" not in inner and " % n" not in inner and "% st" not in inner, loop
    dots = Path(programs["conv_transpose_2d", "tf32-cl"][1].__file__).read_text()
    assert LIVE_LOOP in dots and "(ci < cin_g) | (cin_g % BLOCK_K == 0)" in dots
    fma = Path(programs["conv_transpose_2d", "fma"][1].__file__).read_text()
    assert "for live in range(0, n_live):" in fma and "for ci in range(0, cin_g):" in fma


def test_a_fused_epilogue_and_autotune_run_on_the_static_loop(tmp_path):
    """bias, clamp, scale, eval BatchNorm, tanh and a residual add fused; then the autotuned program
    (its key names cin_g, a constexpr now)."""
    task = task_named("conv_transpose_epilogue")
    program = coder.apply(task, coder.apply(task, None, PORT), Strategy.parse("fuse epilogue"))
    ir = ProgramIR.from_dict(program.metadata["template_ir"])
    ir.kernels()[0].config.update(TILES, transpose_static=1)
    sizes = [{"B": 2, "C_IN": 35, "C_OUT": 19, "H": 3, "W": 2}]
    check_module(task, import_program(generate(task, ir), tmp_path, "fused"), sizes)
    tuned = coder.apply(task, program, Strategy.parse("autotune"))
    ir = ProgramIR.from_dict(tuned.metadata["template_ir"])
    ir.kernels()[0].config["transpose_static"] = 1
    source = generate(task, ir)
    assert "@triton.autotune" in source and "cin_g: tl.constexpr" in source
    check_module(task, import_program(source, tmp_path, "tuned"), task.sizes("cpu"))


@pytest.mark.parametrize("name", list(CASES))
def test_the_key_off_or_on_another_loop_leaves_the_program_unchanged(name):
    task = task_named(name)
    port = coder.apply(task, None, PORT)
    base = port.metadata["template_ir"]
    config = ProgramIR.from_dict(base).kernels()[0].config
    # the fp32 port's dot loop takes it (the H100 probe); the FMA loop was not timed with it
    assert config["transpose_static"] == (config.get("k_loop") != "fma")

    def source(**config) -> str:
        ir = ProgramIR.from_dict(base)
        ir.kernels()[0].config.update(config)
        return generate(task, ir)

    assert source(transpose_static=config["transpose_static"]) == port.source
    assert (source(transpose_static=0) == port.source) == (not config["transpose_static"])
    for other in ({"live_taps": False}, {"phases": False}):  # the `if` and plain forms ignore it
        assert source(transpose_static=1, **other) == source(**other)
