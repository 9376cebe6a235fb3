"""The slide's separated taps (config `sep`, coders/template/emit/pool_sep.py; the port's on 43's window
only, pool_forms.sep_in_port) against PyTorch on the CPU interpreter, at small odd sizes: 42's, 43's and
46's windows and 2-D ones, bands that end inside a step, a fused prologue and epilogue, NaNs, 64-bit
indices, and run-time windows or rows where SEP is off (the slide's own path); the port's separated taps
on 43's window and its old forms outside the rule."""

from __future__ import annotations

import re

import pytest
import torch

from coders.template.emit import pool_sep
from coders.template.emit.module import generate
from coders.template.emit.pool_forms import SEP_CONFIG, SHIFT_CONFIGS
from coders.template.ir import ProgramIR
from mtmc.strategies import PORT
from tests.coders.test_template import check_module, import_program
from tests.coders.test_template_pool import (
    assert_nan_propagates,
    assert_run_time_window,
    coder,
    formed,
    fuse_all,
    kernels,
    pool_task,
)
from tests.coders.test_template_pool_rows import FUSED_POOLS

# (nd, module, shapes, strip): each shape's output row fits the strip and its input row strip x stride
SEP_CASES = [
    (3, "nn.MaxPool3d(3, stride=2, padding=1, dilation=3)", ((1, 2, 9, 11, 29), (2, 1, 8, 13, 31)), 16),
    (3, "nn.AvgPool3d(3, stride=2, padding=1)", ((1, 2, 5, 7, 13), (1, 3, 6, 9, 15)), 8),
    (3, "nn.AvgPool3d(3, 2, 1, ceil_mode=True, count_include_pad=False)", ((1, 2, 5, 7, 13), None), 8),
    (2, "nn.MaxPool2d(3, stride=1, padding=1)", ((1, 2, 7, 13), (2, 1, 6, 9)), 16),
    # 42's window (k4 s1 p1: taps j - 1 .. j + 2); the second input row fills the strip, as 512 in 512
    (2, "nn.MaxPool2d(4, stride=1, padding=1)", ((1, 2, 9, 13), (2, 1, 7, 16)), 16),
    (2, "nn.MaxPool2d(4, stride=2, padding=1, dilation=2)", ((1, 2, 9, 15), None), 8),
]


def sep_module(task, tmp_path, tag: str, strip: int, slide: int = 2, band: int = 3, wide: bool = False,
               fused=None, must: bool = True, gather: int = 0):
    """The task's program in the slide (strip `strip`, bands of `band` rows) with separated taps,
    imported (`wide`: its 64-bit paths forced on; `must`: a launch with SEP off fails; `gather`: the
    last-dim taps that many a tl.gather, config `sep_gather`)."""
    ir = ProgramIR.from_dict(formed(task, [f"tile BLOCK_N={strip}"], fused).metadata["template_ir"])
    (kernel,) = ir.kernels()
    kernel.config.update(slide=slide, sep=1, BAND=band, **({"sep_gather": gather} if gather else {}))
    assert pool_sep.is_sep(kernel)
    source = generate(task, ir)
    assert "tl.gather(win_sep" in source and "SEP=bool(_slide) and" in source
    assert ("= tl.split(win_sv)" in source) == bool(gather)
    if wide:
        source = source.replace("> 2**30", ">= 0")
    if must:  # the case's sizes take the separated taps, not the slide's own path
        source = re.sub(r"SEP=(.*),\n", r"SEP=_sep_on(\1),\n", source)
        source += "\n\ndef _sep_on(on):\n    assert on, 'SEP is off'\n    return on\n"
    return import_program(source, tmp_path, tag)


def _sizes(task, shapes):
    return task.sizes("cpu")[:1] if shapes[1] is None else task.sizes("cpu")


@pytest.mark.parametrize("nd, module, shapes, strip", SEP_CASES, ids=[c[1] for c in SEP_CASES])
@pytest.mark.parametrize("slide, band", [(2, 3), (1, 2), (4, 5)], ids=["s2-b3", "s1-b2", "s4-b5"])
def test_sep_matches_pytorch(nd, module, shapes, strip, slide, band, tmp_path):
    task = pool_task(module, nd=nd, shapes=(shapes[0], shapes[1] or shapes[0]))
    module_ = sep_module(task, tmp_path, "sep", strip, slide, band)
    check_module(task, module_, _sizes(task, shapes))


# `sep_gather`: 42's (k4 s1 p1: 4 taps, no masks at DL 1), 43's (k3 s2 p1 d3) and 46's (avg k3 s2 p1)
# windows; 4 taps a gather (one, a tap past KS unfolded) and 2 (chunks: 42's 2 whole, 3 taps 2 + 1)
GATHER_CASES = [SEP_CASES[4], SEP_CASES[0], SEP_CASES[1], SEP_CASES[2]]


@pytest.mark.parametrize("nd, module, shapes, strip", GATHER_CASES, ids=[c[1] for c in GATHER_CASES])
@pytest.mark.parametrize("gather", [4, 2])
def test_sep_gather_equals_sep(nd, module, shapes, strip, gather, tmp_path):
    """The gathered taps give the per-tap gathers' values bit for bit (max: the same max; avg: the
    same sum order), and PyTorch's within the tests' tolerance."""
    task = pool_task(module, nd=nd, shapes=(shapes[0], shapes[1] or shapes[0]))
    taps = sep_module(task, tmp_path, "taps", strip)
    gathered = sep_module(task, tmp_path, f"gather{gather}", strip, gather=gather)
    check_module(task, gathered, _sizes(task, shapes))
    for i, sizes in enumerate(_sizes(task, shapes)):
        x = task.make_inputs(seed=i + 1, sizes=sizes)[0]
        with torch.no_grad():
            args = task.init_inputs(sizes)
            expected, got = taps.ModelNew(*args)(x), gathered.ModelNew(*args)(x)
        assert torch.equal(got, expected)
        if "Max" in module:
            assert torch.equal(got, task.make_model(sizes=sizes)(x))


@pytest.mark.parametrize("nd, module, shape", [(2, "nn.MaxPool2d(2, stride=1, padding=1)", (1, 2, 9, 13)),
                                               (3, "nn.MaxPool3d(3, stride=2, padding=1, dilation=3)",
                                                (1, 2, 9, 11, 29))])
def test_sep_gather_propagates_nan(nd, module, shape, tmp_path):
    """A NaN wins at DL 1 (no masks: the clamped taps) and at DL 3 (masked), as in PyTorch."""
    task = pool_task(module, nd=nd, nan=True, shapes=(shape, shape))
    assert_nan_propagates(task, sep_module(task, tmp_path, "gnan", 16, gather=4))


def test_sep_with_64_bit_indices(tmp_path):
    nd, module, shapes, strip = SEP_CASES[0]
    task = pool_task(module, nd=nd, shapes=shapes)
    check_module(task, sep_module(task, tmp_path, "wide", strip, wide=True), task.sizes("cpu"))


def test_sep_propagates_nan(tmp_path):
    task = pool_task("nn.MaxPool3d(3, stride=2, padding=1)", nd=3, nan=True,
                     shapes=((1, 2, 7, 9, 11), (1, 2, 7, 9, 11)))
    assert_nan_propagates(task, sep_module(task, tmp_path, "nan", 8))


@pytest.mark.parametrize("nd, module, forward", FUSED_POOLS[1:])
def test_sep_with_fused_prologue_and_epilogue(nd, module, forward, tmp_path):
    task = pool_task(module, forward, nd=nd)
    fused = fuse_all(task, coder.apply(task, None, PORT))
    assert len(kernels(fused)[0].body) > 3
    check_module(task, sep_module(task, tmp_path, "fused", 16, fused=fused), task.sizes("cpu"))


@pytest.mark.parametrize("run", [(3, 3, 0, 1, False), (5, 1, 2, 1, True), (2, 2, 0, 2, False)])
def test_sep_off_where_the_run_time_window_does_not_fit(run, tmp_path):
    """Other run-time windows: stride 3 (not a power of two) and an output row wider than the strip
    take the slide's own path (SEP off); k2 d2 still takes the separated taps at its own taps."""
    task = pool_task("nn.MaxPool2d(3, stride=2, padding=1)", shapes=((1, 2, 9, 15), (1, 2, 9, 15)))
    module_ = sep_module(task, tmp_path, "run", 8, must=False)
    assert_run_time_window(task, module_, run)


def test_sep_is_off_where_it_does_not_apply():
    task = pool_task("nn.MaxPool2d(3, 1, 1)")
    assert "tl.gather" not in coder.apply(task, None, PORT).source
    (kernel,) = kernels(formed(task, ["tile BLOCK_N=8"]))
    kernel.config.update(slide=2, sep=1)
    assert pool_sep.is_sep(kernel)
    for bad in ({"shift": 2}, {"stack": 2}, {"vector": True}, {"slide": 0}):
        kernel.config.update(bad)
        assert not pool_sep.is_sep(kernel)
        kernel.config.update(shift=0, stack=0, vector=False, slide=2)
    task = pool_task("nn.MaxPool1d(3, 1, 1)", nd=1)
    (kernel,) = kernels(formed(task, ["tile BLOCK_N=8"]))
    kernel.config.update(slide=2, sep=1)
    assert not pool_sep.is_sep(kernel)


# the port's separated taps (pool_forms.sep_in_port): 43's window (k3 s2 p1 d3) at small odd sizes whose
# output rows fit the strip of 64 (33 to 64 wide) and input rows its 128 columns: 34 and 62 wide
PORT_SEP_43 = ((1, 3, 9, 11, 71), (2, 1, 8, 13, 127))


def test_port_takes_sep_on_43s_window(tmp_path):
    task = pool_task("nn.MaxPool3d(3, stride=2, padding=1, dilation=3)", nd=3, shapes=PORT_SEP_43)
    program = coder.apply(task, None, PORT)
    (kernel,) = kernels(program)
    assert {k: kernel.config.get(k) for k in SEP_CONFIG} == SEP_CONFIG and pool_sep.is_sep(kernel)
    assert kernel.config["form"] == "rows" and "shift" not in kernel.config
    assert "tl.gather(win_sep" in program.source
    # SEP on at every size (not the slide's own path), and the max exact
    source = re.sub(r"SEP=(.*),\n", r"SEP=_sep_on(\1),\n", program.source)
    source += "\n\ndef _sep_on(on):\n    assert on, 'SEP is off'\n    return on\n"
    module_ = import_program(source, tmp_path, "port43")
    for sizes in task.sizes("cpu"):
        x = task.make_inputs(seed=1, sizes=sizes)[0]
        with torch.no_grad():
            expected, got = task.make_model(sizes=sizes)(x), module_.ModelNew()(x)
        assert got.shape == expected.shape and torch.equal(got, expected)


@pytest.mark.parametrize("module, shape, form", [
    ("nn.MaxPool3d(3, stride=2, padding=1, dilation=3)", (1, 3, 9, 9, 200), "flat"),  # 98 wide
    ("nn.MaxPool3d(3, stride=2, padding=1, dilation=3)", (1, 3, 9, 9, 61), "flat"),  # 29 wide
    ("nn.MaxPool3d(3, stride=2, padding=1, dilation=3)", (1, 3, 9, 9, 130), "3d-dilated"),  # input > 128
    ("nn.MaxPool3d(3, stride=2, padding=1, dilation=3, ceil_mode=True)", (1, 3, 9, 9, 71), "3d-dilated"),
    ("nn.MaxPool3d(3, stride=2, padding=1, dilation=2)", (1, 3, 9, 9, 71), "3d-dilated"),  # 35 wide
    ("nn.MaxPool3d(3, stride=2, padding=0, dilation=3)", (1, 3, 9, 9, 71), "3d-dilated"),  # 33 wide
    ("nn.AvgPool3d(3, stride=2, padding=1)", (1, 3, 5, 7, 129), "3d-128"),  # 46's
])
def test_port_keeps_its_forms_outside_sep_rule(module, shape, form):
    task = pool_task(module, nd=3, shapes=(shape, shape))
    program = coder.apply(task, None, PORT)
    (kernel,) = kernels(program)
    assert "sep" not in kernel.config and "tl.gather" not in program.source
    if form == "flat":
        assert kernel.config.get("form", "flat") == "flat"
    else:
        assert {k: kernel.config.get(k) for k in SHIFT_CONFIGS[form]} == SHIFT_CONFIGS[form]
