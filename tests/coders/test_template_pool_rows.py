"""The pool kernel's rows form (coders/template/emit/pool_rows.py) against PyTorch on the CPU
interpreter, and its place in the port and the menu.

The programs here use strips of 4 columns and bands of 2 output rows, so that at the small odd sizes
of test_template_pool.py a plane has several strips (the last one masked) and several bands (each
re-reading the rows its first window shares with the band before).
"""

from __future__ import annotations

import pytest

from coders.template.emit import pool as pool_emit
from coders.template.emit.module import generate
from coders.template.ir import ProgramIR
from mtmc.protocols import CoderError
from mtmc.strategies import PORT
from tests.coders.test_template import check, check_module, import_program
from tests.coders.test_template_pool import assert_nan_propagates, coder, formed, fuse_all, kernels, pool_task

STRIP = "tile BLOCK_N=4"


def rows_module(task, steps: list[str], tmp_path, tag: str, band: int = 2, wide: bool = False):
    """The program after `steps`, its rows-form kernel set to bands of `band` output rows (with
    `wide`, its 64-bit index paths forced on), imported."""
    program = formed(task, steps)
    ir = ProgramIR.from_dict(program.metadata["template_ir"])
    (kernel,) = ir.kernels()
    assert kernel.config["form"] == "rows"
    kernel.config["BAND"] = band
    kernel.config.pop("slide", None)  # the ring: the port's slide (overlapping windows) has its own tests
    source = generate(task, ir)
    assert "plane_strips" in source and ("win_ring" in source) == (task_nd(task) > 1)
    # strips inside the input take unmasked taps (the cases' sizes have some); vector taps keep masks
    assert ("if plane_inner" in source) == ("vectorize" not in steps)
    if wide:
        source = source.replace("> 2**30", ">= 0")
        assert source.count(">= 0") >= 2
    return import_program(source, tmp_path, tag)


def task_nd(task) -> int:
    return kernels(coder.apply(task, None, PORT))[0].space["nd"]


ROWS_CASES = [
    # 1-D: the outer rows, each pooled on its own
    (1, "nn.MaxPool1d(3, stride=1, padding=1, dilation=2)"),
    (1, "nn.MaxPool1d(3, stride=2, padding=1, dilation=2, ceil_mode=True)"),
    (1, "nn.AvgPool1d(4, stride=1, padding=2, count_include_pad=False)"),
    (1, "nn.AvgPool1d(3, stride=2, padding=1, ceil_mode=True)"),
    # 2-D: the ring where windows share rows (stride < span), rows folded in directly where not
    (2, "nn.MaxPool2d(4, stride=1, padding=1)"),
    (2, "nn.MaxPool2d((3, 2), stride=(2, 1), padding=(1, 0), dilation=(2, 2), ceil_mode=True)"),
    (2, "nn.MaxPool2d((2, 3), stride=(3, 1), dilation=(2, 1))"),
    (2, "nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)"),
    (2, "nn.AvgPool2d(3, stride=1, padding=1, divisor_override=5)"),
    (2, "nn.AvgPool2d(3)"),
    # 3-D: the depth taps inside each row's result
    (3, "nn.MaxPool3d(3, stride=2, padding=1, dilation=(1, 2, 2))"),
    (3, "nn.MaxPool3d(2, stride=(2, 1, 1), ceil_mode=True)"),
    (3, "nn.AvgPool3d(3, stride=2, padding=1)"),
    (3, "nn.AvgPool3d((2, 3, 2), (1, 1, 2), (1, 1, 0), ceil_mode=True, count_include_pad=False)"),
]


@pytest.mark.parametrize("nd, module", ROWS_CASES, ids=[m for _, m in ROWS_CASES])
def test_rows_form_matches_pytorch(nd, module, tmp_path):
    task = pool_task(module, nd=nd)
    check_module(task, rows_module(task, [STRIP], tmp_path, "rows"), task.sizes("cpu"))


VECTOR_CASES = [ROWS_CASES[i] for i in (1, 2, 5, 7, 9, 10, 12)]


@pytest.mark.parametrize("nd, module", VECTOR_CASES, ids=[m for _, m in VECTOR_CASES])
def test_rows_form_vector_taps_match_pytorch(nd, module, tmp_path):
    task = pool_task(module, nd=nd)
    module_ = rows_module(task, [STRIP, "vectorize"], tmp_path, "vec")
    assert module_.__file__ and "win_kv" in open(module_.__file__).read()
    check_module(task, module_, task.sizes("cpu"))


@pytest.mark.parametrize("nd, module, steps", [
    (1, "nn.AvgPool1d(3, stride=2, padding=1, ceil_mode=True)", [STRIP, "vectorize"]),
    (2, "nn.MaxPool2d((3, 2), stride=(2, 1), padding=(1, 0), dilation=(2, 2), ceil_mode=True)", [STRIP]),
    (3, "nn.AvgPool3d(3, stride=2, padding=1)", [STRIP]),
])
def test_rows_form_with_64_bit_indices(nd, module, steps, tmp_path):
    task = pool_task(module, nd=nd)
    check_module(task, rows_module(task, steps, tmp_path, "wide", wide=True), task.sizes("cpu"))


@pytest.mark.parametrize("steps", [[STRIP], [STRIP, "vectorize"]], ids=["taps", "vector"])
def test_rows_form_propagates_nan_and_takes_fp16(steps, tmp_path):
    task = pool_task("nn.MaxPool2d(3, 1, 1)", nan=True)
    module_ = rows_module(task, steps, tmp_path, "nan")
    assert_nan_propagates(task, module_)
    task = pool_task("nn.AvgPool2d(3, 2, 1, ceil_mode=True)", dtype="float16")
    check_module(task, rows_module(task, steps, tmp_path, "fp16"), task.sizes("cpu"))


# pools with a fused prologue and epilogue, for the rows form and its slide (test_template_pool_slide):
# padding stays -inf / 0 after the prologue; the per-channel scale is one number per plane (a 1-D step's
# rows are different planes: the slide reloads it for each row's store)
FUSED_POOLS = [
    (1, "nn.MaxPool1d(2, stride=1, padding=1)", "self.pool(x - 4.0) * self.scale"),
    (2, "nn.AvgPool2d(3, 1, 1)", "self.pool(x * self.scale + 3.0)"),
    (3, "nn.AvgPool3d(3, 2, 1)", "torch.tanh(self.pool(torch.relu(x) * self.scale)) + self.scale"),
]


@pytest.mark.parametrize("nd, module, forward", FUSED_POOLS)
def test_fused_prologue_and_epilogue_in_the_rows_form(nd, module, forward, tmp_path):
    task = pool_task(module, forward, nd=nd)
    fused = fuse_all(task, coder.apply(task, None, PORT))
    assert [k.kind for k in kernels(fused)] == ["pool"] and len(kernels(fused)[0].body) > 3
    for steps in ([STRIP], [STRIP, "vectorize"]):
        program = formed(task, steps, fused)
        assert kernels(program)[0].config["form"] == "rows"
        check(task, program, tmp_path, tag=str(len(steps)))


# --------------------------------------------------------------------------------------------------
# the port and the menu
# --------------------------------------------------------------------------------------------------

def test_port_takes_the_rows_form_where_it_applies():
    """Fixed windows without indices or dilation, with plain taps (45's 11 x 11 too: on an H100 its
    vector taps ran 73% of the floor, plain ones 93%); the flat form for dilated windows (41 and 43
    ran 0.69x and 0.35x of it in the rows form), indices and adaptive pools. Where windows share
    rows the rows form slides (test_template_pool_slide.py)."""
    cases = {"nn.MaxPool2d(4, 1, 1)": ("rows", None), "nn.AvgPool2d(5)": ("rows", None),
             "nn.MaxPool2d(5, dilation=2)": ("flat", None), "nn.AvgPool2d(3, 2, 1)": ("rows", None),
             "nn.MaxPool2d(3, 2, 1, return_indices=True)": ("flat", None),
             "nn.AdaptiveAvgPool2d((4, 3))": ("flat", None)}
    for module, (form, vector) in cases.items():
        cfg = kernels(coder.apply(pool_task(module), None, PORT))[0].config
        assert (cfg.get("form", "flat"), cfg.get("vector")) == (form, vector), module


def test_menu_switches_between_the_rows_form_and_the_others(tmp_path):
    task = pool_task("nn.MaxPool2d(3, 1, 1)")
    port = coder.apply(task, None, PORT)
    legal = [str(s) for s in coder.legal_strategies(task, port)]
    assert {"tile BLOCK_N=128", "tile BLOCK=256", "tile BLOCK_M=8 BLOCK_N=128", "vectorize"} <= set(legal)
    vector = formed(task, ["vectorize"])  # vector taps within the rows form
    assert kernels(vector)[0].config["form"] == "rows" and "win_kv" in vector.source
    assert "vectorize" not in [str(s) for s in coder.legal_strategies(task, vector)]
    flat = formed(task, ["tile BLOCK=256"], vector)
    assert kernels(flat)[0].config == {"BLOCK": 256, "num_warps": 4, "form": "flat"}
    back = formed(task, ["tile BLOCK_N=64"], flat)
    assert kernels(back)[0].config["form"] == "rows" and "win_ring" in back.source
    for bad in ("tile BLOCK_N=48", "tile BLOCK_N=8192"):
        with pytest.raises(CoderError):
            formed(task, [bad])
    indices = pool_task("nn.MaxPool2d(3, 1, 1, return_indices=True)")
    assert not any(str(s).startswith("tile BLOCK_N=") for s in
                   coder.legal_strategies(indices, coder.apply(indices, None, PORT)))
    with pytest.raises(CoderError):
        formed(indices, [STRIP])
    check(task, back, tmp_path)


def test_rows_form_autotunes_over_strips(tmp_path):
    task = pool_task("nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True)")
    program = formed(task, [STRIP])
    space = pool_emit.tuning_space(kernels(program)[0])
    assert space[0] == {"BLOCK_N": 4, "num_warps": 4}
    assert len(space) == len({tuple(sorted(c.items())) for c in space}) > 1
    assert all(set(c) == {"BLOCK_N", "num_warps"} for c in space)
    tuned = formed(task, ["autotune"], program)
    assert "@triton.autotune" in tuned.source and "meta['BLOCK_N']" in tuned.source
    check(task, tuned, tmp_path)
