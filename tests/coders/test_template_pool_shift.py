"""The rows form's shifted taps (config `shift`, coders/template/emit/pool_shift.py; the port's
where pool_forms.shift_in_port says) against PyTorch on the CPU interpreter, at
test_template_pool.py's small odd sizes: groups of 2 and 4 outputs in strips of 4 and 8 columns
(several strips per row, inner ones unmasked, border ones masked), with the ring, the slide and 1-D
rows, a fused prologue and epilogue, NaNs, 64-bit indices, and run-time windows other than the traced
one (SHIFT off: the plain taps); the port's shift at rows as wide as the rule's and its old forms
elsewhere."""

from __future__ import annotations

import pytest

from coders.template.emit import pool_shift
from coders.template.emit.module import generate
from coders.template.emit.pool_forms import SHIFT_CONFIGS
from coders.template.ir import ProgramIR
from mtmc.strategies import PORT
from tests.coders.test_template import check, check_module, import_program
from tests.coders.test_template_pool import (
    assert_nan_propagates,
    assert_run_time_window,
    coder,
    formed,
    fuse_all,
    kernels,
    pool_task,
)
from tests.coders.test_template_pool_rows import FUSED_POOLS, ROWS_CASES, task_nd

# the KernelBench windows the shift is for (41-44, 46) and the rows form's own cases
SHIFT_CASES = [
    (1, "nn.MaxPool1d(8, stride=1, padding=4, dilation=3)"),  # 41's window
    (1, "nn.AvgPool1d(8, stride=1, padding=4)"),  # 44's
    (2, "nn.MaxPool2d(4, stride=1, padding=1)"),  # 42's
    (3, "nn.MaxPool3d(3, stride=2, padding=1, dilation=3)"),  # 43's
    (3, "nn.AvgPool3d(3, stride=2, padding=1)"),  # 46's
] + ROWS_CASES
# shapes that hold the dilated windows (41's spans 22 columns, 43's 7), wider than a few strips
WIDE_SHAPES = {1: ((2, 3, 45), (1, 3, 29)), 3: ((1, 2, 7, 9, 29), (1, 2, 6, 8, 19))}


def shift_task(module: str, forward: str = "self.pool(x)", nd: int = 2, **kw):
    return pool_task(module, forward, nd=nd, shapes=WIDE_SHAPES.get(nd) if "dilation=3" in module else None,
                     **kw)


def shift_module(task, tmp_path, tag: str, group: int, strip: int = 8, slide: int = 0, band: int = 2,
                 wide: bool = False, fused=None):
    """The task's program in the rows form (strip `strip`, bands of `band` rows, slide `slide`) with
    shifted taps in groups of `group`, imported (`wide`: its 64-bit paths forced on)."""
    program = formed(task, [f"tile BLOCK_N={strip}"], fused)
    ir = ProgramIR.from_dict(program.metadata["template_ir"])
    (kernel,) = ir.kernels()
    kernel.config.pop("slide", None)
    kernel.config.update(BAND=band, shift=group, **({"slide": slide} if slide else {}))
    assert pool_shift.is_shift(kernel)
    source = generate(task, ir)
    assert "win_sh = tl.reshape(" in source and "SHIFT=(_k[-1], _s[-1], _p[-1], _d[-1]) ==" in source
    if wide:
        source = source.replace("> 2**30", ">= 0")
    return import_program(source, tmp_path, tag)


@pytest.mark.parametrize("nd, module", SHIFT_CASES, ids=[m for _, m in SHIFT_CASES])
@pytest.mark.parametrize("group, strip, slide", [(2, 4, 0), (4, 8, 2)], ids=["g2-ring", "g4-slide2"])
def test_shift_matches_pytorch(nd, module, group, strip, slide, tmp_path):
    task = shift_task(module, nd=nd)
    check_module(task, shift_module(task, tmp_path, "shift", group, strip, slide), task.sizes("cpu"))


def test_shift_covers_every_tap_once():
    """Each output's taps are the traced window's, from the chunks that hold them (41's window: 8
    taps 3 apart from -4; 43's at stride 2: 3 taps 3 apart from -1)."""
    task = shift_task("nn.MaxPool1d(8, stride=1, padding=4, dilation=3)", nd=1)
    (kernel,) = kernels(formed(task, ["tile BLOCK_N=16"]))
    kernel.config["shift"] = 8
    assert pool_shift.taps(kernel)[5] == [5 + 3 * k - 4 for k in range(8)]
    # every chunk some tap reads, no other; an unmasked strip's chunks lie inside the row (the last
    # group's last chunk passes its last tap, 7 + 21 - 4 = 24, by 3 columns)
    assert pool_shift.chunks(kernel) == list(range(-1, 7))
    ir = ProgramIR.from_dict(formed(task, ["tile BLOCK_N=16"]).metadata["template_ir"])
    ir.kernels()[0].config["shift"] = 8
    assert "plane_inner = plane_inner & (plane_c0 * ST0 + -4 >= 0) & ((plane_c0 + BLOCK_N - 8) * ST0 + 27 " \
        "< IN0)" in generate(task, ir)
    task = shift_task("nn.MaxPool3d(3, stride=2, padding=1, dilation=3)", nd=3)
    (kernel,) = kernels(formed(task, ["tile BLOCK_N=8"]))
    kernel.config["shift"] = 4
    assert pool_shift.taps(kernel) == [[2 * j - 1, 2 * j + 2, 2 * j + 5] for j in range(4)]


@pytest.mark.parametrize("nd, module", [SHIFT_CASES[i] for i in (0, 2, 4)],
                         ids=[SHIFT_CASES[i][1] for i in (0, 2, 4)])
def test_shift_with_64_bit_indices(nd, module, tmp_path):
    task = shift_task(module, nd=nd)
    check_module(task, shift_module(task, tmp_path, "wide", 4, 8, 2, wide=True), task.sizes("cpu"))


def test_shift_propagates_nan(tmp_path):
    task = pool_task("nn.MaxPool2d(3, 1, 1)", nan=True)
    module_ = shift_module(task, tmp_path, "nan", 4, 8, 2)
    assert_nan_propagates(task, module_)


@pytest.mark.parametrize("nd, module, forward", FUSED_POOLS)
def test_shift_with_fused_prologue_and_epilogue(nd, module, forward, tmp_path):
    task = pool_task(module, forward, nd=nd)
    fused = fuse_all(task, coder.apply(task, None, PORT))
    assert len(kernels(fused)[0].body) > 3
    check_module(task, shift_module(task, tmp_path, "fused", 2, 4, 2, fused=fused), task.sizes("cpu"))


@pytest.mark.parametrize("run", [(3, 1, 1, 2, False), (5, 2, 2, 1, True), (2, 1, 0, 1, False)])
def test_shift_reads_other_run_time_windows(run, tmp_path):
    """The chunks hold the traced window's taps; another run-time window (SHIFT off) takes the
    plain taps."""
    task = pool_task("nn.MaxPool2d(3, stride=1, padding=1)")
    module_ = shift_module(task, tmp_path, "run", 4, 8, 2)
    assert_run_time_window(task, module_, run)


def test_shift_is_off_in_the_port_at_narrow_rows_and_where_it_does_not_apply():
    for nd, module in SHIFT_CASES[:5]:  # rows narrower than shift_in_port's
        program = coder.apply(shift_task(module, nd=nd), None, PORT)
        assert "shift" not in kernels(program)[0].config and "win_sh" not in program.source
    task = pool_task("nn.MaxPool2d(3, 1, 1)")
    (kernel,) = kernels(formed(task, ["tile BLOCK_N=4"]))
    for bad in (8, 3, 1):  # wider than the strip, not a power of two, no group
        kernel.config["shift"] = bad
        assert not pool_shift.is_shift(kernel)
    kernel.config.update(shift=2, vector=True)
    assert not pool_shift.is_shift(kernel)
    assert task_nd(task) == 2


# the port's shift (pool_forms.shift_in_port): the probed windows at small odd sizes whose output rows
# are as wide as the rule's (1-D over 1024, 2-D 257-512, 3-D dilated 33-64, 3-D undilated 65-128),
# and second sizes of other widths (several strips: inner ones unmasked); SHIFT_CONFIGS' key, traced
# shape, second shape
PORT_SHIFT = [
    ("1d", "nn.MaxPool1d(8, stride=1, padding=4, dilation=3)", ((2, 3, 1044), (1, 3, 6200))),  # 41's: 1031
    ("1d", "nn.AvgPool1d(8, stride=1, padding=4)", ((2, 3, 1030), (1, 3, 5001))),  # 44's: 1031
    ("2d", "nn.MaxPool2d(4, stride=1, padding=1)", ((1, 3, 7, 300), (2, 3, 5, 1030))),  # 42's: 299
    # 43's window at 33 wide takes the separated taps (pool_forms.sep_in_port; test_template_pool_sep.py):
    # dilation 2, 33 wide, is the rule's other 3-D dilated window
    ("3d-dilated", "nn.MaxPool3d(3, stride=2, padding=1, dilation=2)",
     ((1, 3, 9, 9, 68), (1, 3, 8, 10, 200))),
    # 46's: 65 wide (one strip, masked), then 301 (3 strips of 128: the middle one unmasked where
    # the rows are inside, 11 rows: steps 2 and 4)
    ("3d-128", "nn.AvgPool3d(3, stride=2, padding=1)", ((1, 3, 5, 7, 129), (1, 2, 6, 11, 601))),
]


@pytest.mark.parametrize("key, module, shapes", PORT_SHIFT, ids=[m for _, m, _ in PORT_SHIFT])
def test_port_takes_the_shift_where_probed(key, module, shapes, tmp_path):
    nd = int(key[0])
    task = pool_task(module, nd=nd, shapes=shapes)
    program = coder.apply(task, None, PORT)
    (kernel,) = kernels(program)
    assert {k: kernel.config.get(k) for k in SHIFT_CONFIGS[key]} == SHIFT_CONFIGS[key]
    assert kernel.config["form"] == "rows" and "win_sh = tl.reshape(" in program.source
    check(task, program, tmp_path)


@pytest.mark.parametrize("nd, module, shapes, form", [
    (1, "nn.MaxPool1d(8, stride=2, padding=4, dilation=3)", ((2, 3, 2100), None), "flat"),  # stride 2
    (1, "nn.AvgPool1d(8, stride=1, padding=4)", ((2, 3, 1000), None), "rows"),  # 1001: one strip of 1024
    (1, "nn.MaxPool1d(2, stride=2)", ((2, 3, 4100), None), "rows"),  # no overlap (level 2's 55)
    (2, "nn.MaxPool2d(4, stride=1, padding=1)", ((1, 3, 7, 600), None), "rows"),  # 599: the slide at 128
    (2, "nn.MaxPool2d(3, stride=1, padding=1, dilation=2)", ((1, 3, 7, 300), None), "flat"),  # dilated
    (2, "nn.AvgPool2d(11)", ((1, 3, 11, 3000), None), "rows"),  # 45's: no overlap
    (3, "nn.AvgPool3d(3, stride=2, padding=1)", ((1, 3, 5, 5, 100), None), "rows"),  # 46's: the slide
    (3, "nn.MaxPool3d(3, stride=2, padding=1, dilation=3)", ((1, 3, 9, 9, 200), None), "flat"),  # 98
])
def test_port_keeps_its_forms_outside_the_rule(nd, module, shapes, form):
    task = pool_task(module, nd=nd, shapes=(shapes[0], shapes[0]))
    program = coder.apply(task, None, PORT)
    (kernel,) = kernels(program)
    assert kernel.config.get("form", "flat") == form and "shift" not in kernel.config
    assert "win_sh" not in program.source
