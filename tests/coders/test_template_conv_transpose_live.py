"""The transposed conv's live-tap K loop (emit/conv_transpose_loop.py) against PyTorch.

CPU interpreter, tiny odd sizes, 16 x 16 x 16 tiles. Each case is checked by a program with the dot
loop (TF32 on the port's rounded channels-last copy; ieee on NC*), the FMA loop, and the loop before
live taps (live_taps=False); one imported program per task and loop runs every geometry, since the
geometry is read from the module at run time. The groups' 18 input channels make two channel blocks
per live tap in the dot loop, so its steps cross tap boundaries.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from coders.template import TemplateCoder
from coders.template.emit.module import generate
from coders.template.ir import ProgramIR
from mtmc.strategies import PORT
from tests.coders.test_template import check_module, import_program
from tests.coders.test_template_conv_transpose import geometry, task_named

coder = TemplateCoder()
TILES = {"BLOCK_M": 16, "BLOCK_N": 16, "BLOCK_K": 16}
LOOPS = {
    "tf32-cl": {"precision": "tf32", "channels_last": True, "tf32_round": True},
    "ieee-nc": {"precision": "ieee", "channels_last": False, "tf32_round": False},
    "fma": {"k_loop": "fma", "precision": "ieee", "channels_last": False, "tf32_round": False},
    "if-form": {"live_taps": False, "precision": "tf32", "channels_last": True, "tf32_round": True},
}
LIVE_LOOP = "for step in range(0, n_live * c_blocks):"

# kernel, stride, padding, output_padding, dilation, groups, sizes; 1-D has no bias, 2-D and 3-D have one
CASES = {
    "conv_transpose_1d": [
        geometry(3, 1, 1, 0, 2, 2),                # stride 1: one phase
        geometry(1, 2, 0, 1, 1, 1),                # kernel 1, stride 2: the odd phase has no live tap
        geometry(2, 3, 1, 2, 1, 2),                # kernel < stride
        geometry(3, 3, 2, 1, 1, 1),                # kernel = stride
        geometry(5, 2, 2, 1, 2, 1),                # dilation 2, stride 2: even r + pad phases only
        geometry(4, 2, 1, 1, 3, 1),                # dilation 3, stride 2
        geometry(5, 3, 3, 1, 2, 2),                # dilation 2, stride 3: tinv 2
    ],
    "conv_transpose_2d": [
        geometry(1, 2, 0, 1, 1, 2, H=3, W=4),      # dead phases: their tile is the bias
        geometry((4, 4), 2, 1, 0, 1, 1),           # kernel > stride (KernelBench 34's pattern)
        geometry((3, 2), (2, 3), (1, 2), (1, 0), (2, 1), 2),
    ],
    "conv_transpose_3d": [
        geometry(4, 2, 1, 0, 1, 1, D=2, H=3, W=2),
        geometry((3, 1, 2), (2, 2, 3), (1, 0, 0), (1, 1, 2), (1, 2, 1), 2, D=2, H=2, W=3),
        geometry((3, 3, 2), (2, 1, 2), (2, 1, 0), (0, 0, 1), (2, 1, 1), 1, D=3, H=2, W=2),
    ],
}
SIZES = {"conv_transpose_1d": {"B": 2, "C_IN": 36, "C_OUT": 10, "L": 5},
         "conv_transpose_2d": {"B": 2, "C_IN": 36, "C_OUT": 6, "H": 3, "W": 3},
         "conv_transpose_3d": {"B": 1, "C_IN": 36, "C_OUT": 6, "D": 2, "H": 2, "W": 2}}


def configured_programs(tmp_path_factory, configs: dict[str, dict]) -> dict:
    """(task name, config name) -> (task, imported program): each CASES task's port, its kernel's
    config updated with TILES and the named config."""
    out = {}
    for name in CASES:
        task = task_named(name)
        base = coder.apply(task, None, PORT).metadata["template_ir"]
        folder = tmp_path_factory.mktemp(name)
        for label, config in configs.items():
            ir = ProgramIR.from_dict(base)
            ir.kernels()[0].config.update(TILES, **config)
            out[name, label] = (task, import_program(generate(task, ir), folder, f"{name}_{label}"))
    return out


@pytest.fixture(scope="module")
def programs(tmp_path_factory) -> dict:
    """(task name, loop) -> (task, imported program)."""
    return configured_programs(tmp_path_factory, LOOPS)


def case_id(value) -> str:
    return value if isinstance(value, str) else "-".join(map(str, value.values()))


@pytest.mark.parametrize("loop", list(LOOPS))
@pytest.mark.parametrize("name, case", [(n, c) for n, cases in CASES.items() for c in cases], ids=case_id)
def test_live_tap_loop_matches_pytorch_over_the_geometry(name, case, loop, programs):
    task, module = programs[name, loop]
    check_module(task, module, [{**SIZES[name], **case}])


def test_the_loops_read_as_intended(programs):
    """The dot loop is one loop over (live tap, channel block), with no test; the FMA loop keeps its
    channel loop inside the live taps'; live_taps=False is the `if` form, every tap tested."""
    sources = {loop: Path(programs["conv_transpose_3d", loop][1].__file__).read_text() for loop in LOOPS}
    for loop in ("tf32-cl", "ieee-nc"):
        assert LIVE_LOOP in sources[loop] and "if (e0" not in sources[loop]
        assert "for c0 in" not in sources[loop] and "for tap in" not in sources[loop]
    fma = sources["fma"]
    assert "for live in range(0, n_live):" in fma and "for ci in range(0, cin_g):" in fma
    assert "if (e0" not in fma
    assert "if (e0 % st0 == 0) & (e1 % st1 == 0) & (e2 % st2 == 0):" in sources["if-form"]
    assert "n_live" not in sources["if-form"] and "_tstep" not in sources["if-form"]
