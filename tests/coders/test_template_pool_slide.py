"""The rows form's slide (config `slide`, coders/template/emit/pool_slide.py) against PyTorch on the
CPU interpreter: strips of 4 columns, bands of 3 output rows walked 1, 2 or 4 rows per step (a band's
last step passes its end), at test_template_pool.py's small odd sizes; and its place in the port
(undilated 2-D and 3-D windows that share rows: pool_forms.slide_in_port) and the menu."""

from __future__ import annotations

import pytest
import torch

from coders.template.emit.module import generate
from coders.template.ir import ProgramIR
from mtmc.strategies import PORT
from tests.coders.test_template import check, check_module, import_program
from tests.coders.test_template_pool import assert_nan_propagates, coder, formed, fuse_all, kernels, pool_task
from tests.coders.test_template_pool_rows import FUSED_POOLS, ROWS_CASES, STRIP, task_nd


def slide_module(task, steps: list[str], tmp_path, tag: str, step: int, band: int = 3,
                 wide: bool = False, params: str | None = None):
    """The program after `steps` with its rows-form kernel set to slide `step` output rows per
    loop step over bands of `band` rows (`wide`: its 64-bit paths forced on), imported."""
    program = formed(task, steps)
    ir = ProgramIR.from_dict(program.metadata["template_ir"])
    (kernel,) = ir.kernels()
    assert kernel.config["form"] == "rows"
    kernel.config.update(BAND=band, slide=step)
    source = generate(task, ir)
    assert "win_ring" not in source and f"STEP={step}" in source
    assert ("win_q0" in source) == (task_nd(task) > 1)
    if wide:
        source = source.replace("> 2**30", ">= 0")
    return import_program(source, tmp_path, tag)


@pytest.mark.parametrize("nd, module", ROWS_CASES, ids=[m for _, m in ROWS_CASES])
@pytest.mark.parametrize("step", [1, 2, 4])
def test_slide_matches_pytorch(nd, module, step, tmp_path):
    task = pool_task(module, nd=nd)
    check_module(task, slide_module(task, [STRIP], tmp_path, "slide", step), task.sizes("cpu"))


@pytest.mark.parametrize("nd, module", [ROWS_CASES[i] for i in (1, 5, 7, 10, 12)],
                         ids=[ROWS_CASES[i][1] for i in (1, 5, 7, 10, 12)])
def test_slide_with_vector_taps_and_64_bit_indices(nd, module, tmp_path):
    task = pool_task(module, nd=nd)
    check_module(task, slide_module(task, [STRIP, "vectorize"], tmp_path, "vec", 2), task.sizes("cpu"))
    check_module(task, slide_module(task, [STRIP], tmp_path, "wide", 2, wide=True), task.sizes("cpu"))


@pytest.mark.parametrize("traced, run", [
    # the queue holds the traced window's span of rows; other run-time windows fold their rows in
    ("nn.MaxPool2d(3, stride=1, padding=1)", (5, 1, 2, 1, False)),  # a wider span: no queue
    ("nn.MaxPool2d(3, stride=1, padding=1)", (2, 1, 0, 1, True)),  # a narrower one: the queue's end
    ("nn.MaxPool2d((3, 2), stride=1, dilation=(2, 1))", (3, 3, 1, 1, False)),  # no overlap: no queue
])
def test_slide_reads_other_run_time_windows(traced, run, tmp_path):
    task = pool_task(traced)
    module_ = slide_module(task, [STRIP], tmp_path, "run", 2)
    sizes = task.sizes("cpu")[0]
    x = task.make_inputs(seed=1, sizes=sizes)[0]
    model = module_.ModelNew()
    k, s, p, d, ceil = run
    for pool in (model.pool,):
        pool.kernel_size, pool.stride, pool.padding, pool.dilation, pool.ceil_mode = k, s, p, d, ceil
    expected = torch.nn.functional.max_pool2d(x, k, s, p, d, ceil)
    with torch.no_grad():
        torch.testing.assert_close(model(x), expected)


def test_slide_propagates_nan_and_takes_fp16(tmp_path):
    task = pool_task("nn.MaxPool2d(3, 1, 1)", nan=True)
    module_ = slide_module(task, [STRIP], tmp_path, "nan", 2)
    assert "propagate_nan=tl.PropagateNan.ALL" in open(module_.__file__).read()
    assert_nan_propagates(task, module_)
    task = pool_task("nn.AvgPool2d(3, 2, 1, ceil_mode=True)", dtype="float16")
    check_module(task, slide_module(task, [STRIP], tmp_path, "fp16", 4), task.sizes("cpu"))


@pytest.mark.parametrize("nd, module", [
    (2, "nn.MaxPool2d(4, 1, 1)"),  # 42's window: 4 x 4 at stride 1
    (3, "nn.AvgPool3d(3, 2, 1)"),  # 46's: 3 x 3 x 3 at stride 2
    (2, "nn.AvgPool2d((3, 2), stride=(2, 3), padding=(1, 0), ceil_mode=True, count_include_pad=False)"),
])
def test_port_slides_undilated_windows_that_share_rows(nd, module, tmp_path):
    """The port's program as it is (slide 2, the strip to the row up to 128, the launcher's band: the
    whole plane at these sizes, so an odd band's last step passes its end) matches PyTorch."""
    task = pool_task(module, nd=nd)
    program = coder.apply(task, None, PORT)
    (kernel,) = kernels(program)
    assert {k: kernel.config.get(k) for k in ("form", "slide", "num_warps")} == \
        {"form": "rows", "slide": 2, "num_warps": 4}
    assert kernel.config["BLOCK_N"] <= 128 and "win_q0" in program.source and "win_ring" not in program.source
    check(task, program, tmp_path)


@pytest.mark.parametrize("nd, module", [
    (1, "nn.AvgPool1d(8, 1, 4)"),  # 44's window: a 1-D pool's rows share nothing (not probed)
    (1, "nn.MaxPool1d(3, 1, 1, dilation=3)"),  # 41's kind: dilated, the flat form
    (3, "nn.MaxPool3d(3, 2, 1, dilation=3)"),  # 43's: dilated, the flat form
    (2, "nn.MaxPool2d(3, 1, 1, dilation=(2, 1))"),  # dilated along one dim
    (2, "nn.AvgPool2d(3)"),  # 45's kind: no shared rows, the ring's direct folds
    (2, "nn.MaxPool2d((2, 3), stride=(2, 1))"),  # shares columns only
    (2, "nn.MaxPool2d(3, 1, 1, return_indices=True)"),  # indices: the flat form
])
def test_port_keeps_the_ring_or_flat_form_elsewhere(nd, module):
    program = coder.apply(pool_task(module, nd=nd), None, PORT)
    assert "slide" not in kernels(program)[0].config and "win_q0" not in program.source


def test_strip_steps_keep_the_port_slide_and_other_forms_drop_it():
    task = pool_task("nn.MaxPool2d(4, 1, 1)")
    strip = formed(task, ["tile BLOCK_N=256"])
    assert kernels(strip)[0].config["slide"] == 2 and "win_q0" in strip.source
    for step in ("tile BLOCK=256", "tile BLOCK_M=8 BLOCK_N=32"):
        assert "slide" not in kernels(formed(task, [step]))[0].config
    ring = formed(task, ["tile BLOCK=256", "tile BLOCK_N=64"])
    assert "slide" not in kernels(ring)[0].config and "win_ring" in ring.source


@pytest.mark.parametrize("nd, module, forward", FUSED_POOLS)
def test_slide_with_fused_prologue_and_epilogue(nd, module, forward, tmp_path):
    task = pool_task(module, forward, nd=nd)
    program = formed(task, [STRIP], fuse_all(task, coder.apply(task, None, PORT)))
    ir = ProgramIR.from_dict(program.metadata["template_ir"])
    (kernel,) = ir.kernels()
    assert len(kernel.body) > 3
    kernel.config.update(BAND=3, slide=2)
    check_module(task, import_program(generate(task, ir), tmp_path, "fused"), task.sizes("cpu"))
