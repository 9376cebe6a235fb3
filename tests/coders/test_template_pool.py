"""Pooling in the template coder: every form against PyTorch on the CPU interpreter.

Each case is a small task (a pooling module or function at odd sizes, checked at two input shapes)
written here from a template; tasks/pool_*.py are whole KernelBench-format files. Sizes are odd and
windows do not divide them, so ceil_mode, padding and partial adaptive windows are exercised.
"""

from __future__ import annotations

import pytest
import torch

from coders.template import TemplateCoder
from coders.template.emit import pool as pool_emit
from coders.template.emit.module import generate
from coders.template.ir import ProgramIR
from mtmc.program import Program
from mtmc.protocols import CoderError
from mtmc.strategies import PORT, Strategy
from mtmc.tasks import Task
from tests.coders.test_template import check, check_module, import_program, local_task

coder = TemplateCoder()

SOURCE = '''
import torch
import torch.nn as nn
import torch.nn.functional as F

SHAPE = {shape}


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = {module}
        self.scale = nn.Parameter(torch.rand({channels}, {ones}) + 0.5)

    def forward(self, x):
        return {forward}


def get_inputs():
    x = torch.randn(SHAPE).to(torch.{dtype})
    if {nan}:
        x.view(-1)[::5] = float("nan")
    return [x]


def get_init_inputs():
    return []


MTMC = {{"cpu_sizes": [{{"SHAPE": {shape}}}, {{"SHAPE": {second}}}]}}
'''

SHAPES = {1: ((2, 3, 13), (1, 3, 8)), 2: ((2, 3, 9, 11), (1, 3, 6, 5)), 3: ((1, 3, 7, 6, 9), (2, 3, 5, 8, 4))}


def pool_task(module: str, forward: str = "self.pool(x)", nd: int = 2, dtype: str = "float32",
              nan: bool = False, shapes: tuple | None = None) -> Task:
    shape, second = shapes or SHAPES[nd]
    ones = ", ".join(["1"] * nd)
    source = SOURCE.format(shape=shape, second=second, module=module, forward=forward, dtype=dtype,
                           nan=nan, channels=shape[-nd - 1], ones=ones)
    return Task(name="pool_case", source=source)


def kernels(program: Program) -> list:
    return ProgramIR.from_dict(program.metadata["template_ir"]).kernels()



def assert_nan_propagates(task: Task, module_) -> None:
    """`module_` (a program for a NaN task, pool_task(nan=True)) against PyTorch on the same input: some
    outputs NaN, not all, and every value equal, NaN for NaN."""
    sizes = task.sizes("cpu")[0]
    x = task.make_inputs(seed=1, sizes=sizes)[0]
    with torch.no_grad():
        expected, got = task.make_model(sizes=sizes)(x), module_.ModelNew()(x)
    assert expected.isnan().any() and not expected.isnan().all()
    torch.testing.assert_close(got, expected, equal_nan=True)


def assert_run_time_window(task: Task, module_, window: tuple[int, int, int, int, bool]) -> None:
    """`module_` (a program for a MaxPool2d task) with its module's window set to (kernel_size, stride,
    padding, dilation, ceil_mode) after tracing, against max_pool2d with that window."""
    x = task.make_inputs(seed=1, sizes=task.sizes("cpu")[0])[0]
    model = module_.ModelNew()
    k, s, p, d, ceil = window
    model.pool.kernel_size, model.pool.stride, model.pool.padding = k, s, p
    model.pool.dilation, model.pool.ceil_mode = d, ceil
    with torch.no_grad():
        torch.testing.assert_close(model(x), torch.nn.functional.max_pool2d(x, k, s, p, d, ceil))

# --------------------------------------------------------------------------------------------------
# every form against PyTorch
# --------------------------------------------------------------------------------------------------

MODULES = [
    (1, "nn.MaxPool1d(3, stride=2, padding=1, dilation=2, ceil_mode=True)"),
    (1, "nn.MaxPool1d(4)"),
    (1, "nn.AvgPool1d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)"),
    (1, "nn.AvgPool1d(5, stride=1, padding=2)"),
    (2, "nn.MaxPool2d((3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2))"),
    (2, "nn.MaxPool2d(2, ceil_mode=True)"),
    (2, "nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, divisor_override=5)"),
    (2, "nn.AvgPool2d((2, 3), stride=(1, 2), padding=(1, 1), count_include_pad=False)"),
    (2, "nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True)"),
    (3, "nn.MaxPool3d(3, stride=2, padding=1, ceil_mode=True)"),
    (3, "nn.MaxPool3d((2, 3, 2), stride=(1, 2, 2), dilation=(2, 1, 1))"),
    (3, "nn.AvgPool3d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)"),
    (3, "nn.AvgPool3d(2, divisor_override=3)"),
    (1, "nn.AdaptiveAvgPool1d(4)"),
    (2, "nn.AdaptiveAvgPool2d((4, None))"),
    (2, "nn.AdaptiveAvgPool2d((5, 3))"),
    (3, "nn.AdaptiveAvgPool3d((2, 3, None))"),
    (1, "nn.AdaptiveMaxPool1d(5)"),
    (2, "nn.AdaptiveMaxPool2d((4, 3))"),
    (3, "nn.AdaptiveMaxPool3d((2, None, 3))"),
    (2, "nn.AdaptiveAvgPool2d(1)"),
    (2, "nn.AdaptiveMaxPool2d((1, 1))"),
]


@pytest.mark.parametrize("nd, module", MODULES, ids=[m for _, m in MODULES])
def test_pooling_modules_match_pytorch(nd, module, tmp_path):
    task = pool_task(module, nd=nd)
    check(task, coder.apply(task, None, PORT), tmp_path)


WITH_INDICES = [
    (1, "nn.MaxPool1d(3, stride=2, padding=1, dilation=2, ceil_mode=True, return_indices=True)"),
    (2, "nn.MaxPool2d((3, 2), stride=(2, 1), padding=1, return_indices=True)"),
    (3, "nn.MaxPool3d(2, stride=2, padding=1, ceil_mode=True, return_indices=True)"),
    (2, "nn.AdaptiveMaxPool2d((4, 3), return_indices=True)"),
    (3, "nn.AdaptiveMaxPool3d((2, None, 3), return_indices=True)"),
]


@pytest.mark.parametrize("nd, module", WITH_INDICES, ids=[m for _, m in WITH_INDICES])
def test_return_indices_numbers_positions_like_pytorch(nd, module, tmp_path):
    """Values and int64 flat positions within the pooled dims (checked exactly)."""
    task = pool_task(module, nd=nd)
    program = coder.apply(task, None, PORT)
    assert [len(k.outputs) for k in kernels(program)] == [2]
    check(task, program, tmp_path)


FUNCTIONS = [
    (2, "F.max_pool2d(x, 3, 2, 1, return_indices=True)"),
    (2, "F.max_pool2d_with_indices(x, 2, 1, 0, 2)[1]"),
    (1, "torch.max_pool1d(x, 3)"),
    (1, "torch.avg_pool1d(x, 4, 3, 1, True, False)"),
    (3, "F.avg_pool3d(x, (3, 2, 3), 2, 1, divisor_override=7)"),
    (2, "F.adaptive_max_pool2d(x, (3, 4), True)"),
    (1, "torch.adaptive_max_pool1d(x, 4)"),
    (3, "F.adaptive_avg_pool3d(x, (3, None, 2))"),
    (2, "F.avg_pool2d(x, x.size()[2:])"),  # global average pooling with a computed kernel size
    (2, "F.max_pool2d(x, kernel_size=(2, 3), stride=None, padding=(1, 1), ceil_mode=True)"),
]


@pytest.mark.parametrize("nd, forward", FUNCTIONS, ids=[f for _, f in FUNCTIONS])
def test_pooling_functions_match_pytorch(nd, forward, tmp_path):
    task = pool_task("nn.Identity()", forward, nd=nd)
    check(task, coder.apply(task, None, PORT), tmp_path)


def test_unbatched_input_and_fp16_are_pooled_over_their_last_dims(tmp_path):
    task = pool_task("nn.MaxPool2d(3, 2, 1, return_indices=True)", shapes=((3, 9, 11), (3, 6, 5)))
    check(task, coder.apply(task, None, PORT), tmp_path)
    task = pool_task("nn.AvgPool2d(3, 2, 1, ceil_mode=True)", dtype="float16")
    program = coder.apply(task, None, PORT)
    assert 'dtype=x.dtype' in program.source  # computed in fp32, stored in the input's dtype
    check(task, program, tmp_path, tag="fp16")


@pytest.mark.parametrize("module", ["nn.MaxPool2d(3, 2, 1, return_indices=True)",
                                    "nn.AdaptiveMaxPool2d((4, 3), return_indices=True)",
                                    "nn.AdaptiveMaxPool2d(1)", "nn.AvgPool2d(2, 1)"])
def test_nan_propagates_as_in_pytorch(module, tmp_path):
    """A NaN in a window wins the max (its position is the index); avg sums it in."""
    task = pool_task(module, nan=True)
    module_ = import_program(coder.apply(task, None, PORT).source, tmp_path, "nan")
    sizes = task.sizes("cpu")[0]
    reference = task.make_model(sizes=sizes)
    x = task.make_inputs(seed=1, sizes=sizes)[0]
    assert x.isnan().any()
    with torch.no_grad():
        expected, got = reference(x), module_.ModelNew()(x)
    expected = expected if isinstance(expected, tuple) else (expected,)
    got = got if isinstance(got, tuple) else (got,)
    assert expected[0].isnan().any()
    for e, g in zip(expected, got, strict=True):
        torch.testing.assert_close(g, e, equal_nan=True)


def test_module_parameters_are_read_at_run_time(tmp_path):
    """A task size that changes the kernel size, stride and padding still runs (they are not baked in)."""
    task = local_task("pool_kernelbench_sizes")
    assert len({s.get("kernel_size", 3) for s in task.sizes("cpu")}) > 1
    check(task, coder.apply(task, None, PORT), tmp_path)


# --------------------------------------------------------------------------------------------------
# fusion
# --------------------------------------------------------------------------------------------------

def fuse_all(task: Task, program: Program) -> Program:
    while fusions := [s for s in coder.legal_strategies(task, program) if s.kind == "fuse"]:
        program = coder.apply(task, program, fusions[0])
    return program


@pytest.mark.parametrize("nd, module, forward", [
    # padding stays -inf: f(padding) = -4 would win the border windows of x - 4
    (1, "nn.MaxPool1d(2, stride=1, padding=1)", "self.pool(x - 4.0)"),
    # count_include_pad: padding adds 0, not f(0) = 3 (a per-channel scale, 1 of the 2 outer dims)
    (2, "nn.AvgPool2d(3, 2, 1)", "self.pool(x * self.scale + 3.0)"),
    (3, "nn.MaxPool3d(2, 2, 1, return_indices=True)", "self.pool(torch.relu(x) * self.scale)[1]"),
    (2, "nn.AdaptiveAvgPool2d((4, 3))", "self.pool(torch.sigmoid(x) * x)"),
])
def test_prologue_is_applied_to_each_window_element(nd, module, forward, tmp_path):
    task = pool_task(module, forward, nd=nd)
    port = coder.apply(task, None, PORT)
    assert Strategy.parse("fuse prologue") in coder.legal_strategies(task, port)
    program = coder.apply(task, port, Strategy.parse("fuse prologue"))
    assert [k.kind for k in kernels(program)] == ["pool"]
    check(task, program, tmp_path)


@pytest.mark.parametrize("nd, module, forward", [
    (2, "nn.MaxPool2d(3, 2, 1)", "torch.tanh(self.pool(x) * 2.0) + self.scale"),
    (1, "nn.AdaptiveMaxPool1d(5, return_indices=True)", "(lambda r: (r[0] - 1.0, r[1]))(self.pool(x))"),
])
def test_epilogue_is_applied_to_each_pooled_element(nd, module, forward, tmp_path):
    task = pool_task(module, forward, nd=nd)
    port = coder.apply(task, None, PORT)
    program = coder.apply(task, port, Strategy.parse("fuse epilogue"))
    assert [k.kind for k in kernels(program)] == ["pool"]
    check(task, program, tmp_path)


def test_activation_pool_bias_chain_becomes_one_kernel(tmp_path):
    """relu -> max pool -> + per-channel scale: prologue and epilogue in the pool kernel."""
    task = pool_task("nn.MaxPool2d(2, ceil_mode=True)", "self.pool(torch.relu(x) + 0.5) * self.scale")
    program = fuse_all(task, coder.apply(task, None, PORT))
    assert [k.kind for k in kernels(program)] == ["pool"]
    check(task, program, tmp_path)


def test_a_prologue_value_used_elsewhere_is_not_fused():
    task = pool_task("nn.MaxPool2d(3, 2, 1)", "(lambda r: (self.pool(r), r))(torch.relu(x))")
    port = coder.apply(task, None, PORT)
    assert Strategy.parse("fuse prologue") not in coder.legal_strategies(task, port)


def test_conv_relu_pool_task_fuses_around_the_library_conv(tmp_path):
    task = local_task("pool_conv_relu")
    program = fuse_all(task, coder.apply(task, None, PORT))
    kinds = [k.kind for k in kernels(program)]
    assert "pool" in kinds and "pointwise" not in kinds  # relu and scale run inside a kernel
    check(task, program, tmp_path)


# --------------------------------------------------------------------------------------------------
# the menu
# --------------------------------------------------------------------------------------------------

def test_legal_steps_and_tiny_blocks_keep_the_program_correct(tmp_path):
    task = pool_task("nn.AvgPool3d(3, 2, 1, ceil_mode=True, count_include_pad=False)", nd=3)
    port = coder.apply(task, None, PORT)
    legal = [str(s) for s in coder.legal_strategies(task, port)]
    assert {"tile BLOCK=128", "num_warps 8", "autotune"} <= set(legal)
    for i, text in enumerate(["tile BLOCK=128", "num_warps 2", "autotune"]):
        check(task, coder.apply(task, port, Strategy.parse(text)), tmp_path, tag=f"s{i}")
    ir = ProgramIR.from_dict(port.metadata["template_ir"])
    ir.kernels()[0].config = {"BLOCK": 16, "num_warps": 4}  # the flat form: a masked last block
    check_module(task, import_program(generate(task, ir), tmp_path, "tiny"), task.sizes("cpu"))


def test_autotune_space_starts_at_the_current_config_and_is_valid():
    task = pool_task("nn.MaxPool2d(3, 2, 1)")
    program = coder.apply(task, coder.apply(task, None, PORT), Strategy.parse("tile BLOCK=256"))
    kernel = kernels(program)[0]
    space = pool_emit.tuning_space(kernel)
    assert space[0] == {"BLOCK": 256, "num_warps": 4}
    assert len(space) == len({tuple(sorted(c.items())) for c in space}) > 1
    for cfg in space:
        assert set(cfg) == {"BLOCK", "num_warps"}
        assert cfg["BLOCK"] & (cfg["BLOCK"] - 1) == 0 and cfg["num_warps"] in (1, 2, 4, 8, 16)
    tuned = coder.apply(task, program, Strategy.parse("autotune"))
    assert "@triton.autotune" in tuned.source
    assert not [s for s in coder.legal_strategies(task, tuned) if s.kind in ("tile", "num_warps")]


def test_global_average_pooling_stays_a_mean_reduction():
    for module in ("nn.AdaptiveAvgPool2d(1)", "nn.AdaptiveAvgPool2d((1, 1))"):
        program = coder.apply(pool_task(module), None, PORT)
        assert [k.kind for k in kernels(program)] == ["reduce"]


# --------------------------------------------------------------------------------------------------
# the tile form (rows x columns of one plane) and its vector taps
# --------------------------------------------------------------------------------------------------

TILE = "tile BLOCK_M=4 BLOCK_N=8"  # several row blocks and a masked column block at the test sizes


def formed(task: Task, steps: list[str], program: Program | None = None) -> Program:
    """The port (or `program`) after the given steps, through the coder as a planner would."""
    program = program or coder.apply(task, None, PORT)
    for text in steps:
        program = coder.apply(task, program, Strategy.parse(text))
    return program


def check_wide(task: Task, program: Program, tmp_path, tag: str) -> None:
    """The program with its 64-bit index paths forced on (they switch on past 2**30 elements)."""
    source = program.source.replace("> 2**30", ">= 0")
    assert source.count(">= 0") >= 2
    check_module(task, import_program(source, tmp_path, tag), task.sizes("cpu"))


TILE_CASES = [
    (1, "nn.MaxPool1d(3, stride=2, padding=1, dilation=2, ceil_mode=True, return_indices=True)"),
    (1, "nn.AvgPool1d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)"),
    (1, "nn.AdaptiveAvgPool1d(4)"),
    (2, "nn.MaxPool2d((3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2))"),
    (2, "nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, divisor_override=5)"),
    (2, "nn.AdaptiveMaxPool2d((4, 3), return_indices=True)"),
    (3, "nn.MaxPool3d(2, stride=2, padding=1, ceil_mode=True, return_indices=True)"),
    (3, "nn.AvgPool3d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)"),
    (3, "nn.AdaptiveAvgPool3d((2, 3, None))"),
]


@pytest.mark.parametrize("nd, module", TILE_CASES, ids=[m for _, m in TILE_CASES])
def test_tile_form_matches_pytorch(nd, module, tmp_path):
    task = pool_task(module, nd=nd)
    program = formed(task, [TILE])
    assert [k.config.get("form") for k in kernels(program)] == ["tile"]
    assert f"% OUT{nd - 1}" not in program.source  # no per-element div/mod (the flat form's)
    check(task, program, tmp_path)


LONG_ROWS = ((1, 2, 5, 41), (2, 1, 4, 23))
VECTOR_CASES = [
    (1, "nn.MaxPool1d(3, stride=2, padding=1, dilation=2, ceil_mode=True)", None),
    (1, "nn.AvgPool1d(5, stride=1, padding=2)", None),
    (2, "nn.MaxPool2d((3, 2), stride=(2, 1), padding=(1, 0), dilation=(1, 2))", None),
    (2, "nn.AvgPool2d((2, 3), stride=(1, 2), padding=(1, 1), count_include_pad=False)", None),
    (2, "nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, divisor_override=5)", None),
    # a last-dim window of 19 taps: two steps of KV = 16, the second mostly masked
    (2, "nn.AvgPool2d((2, 19), stride=(1, 7), padding=(1, 9), ceil_mode=True)", LONG_ROWS),
    (2, "nn.MaxPool2d((2, 19), stride=(1, 7), padding=(0, 9), dilation=(2, 1))", LONG_ROWS),
    (3, "nn.MaxPool3d((2, 3, 2), stride=(1, 2, 2), dilation=(2, 1, 1))", None),
    (3, "nn.AvgPool3d(2, divisor_override=3)", None),
]


@pytest.mark.parametrize("nd, module, shapes", VECTOR_CASES, ids=[m for _, m, _ in VECTOR_CASES])
def test_vector_taps_match_pytorch(nd, module, shapes, tmp_path):
    task = pool_task(module, nd=nd, shapes=shapes)
    program = formed(task, [TILE, "vectorize"])
    assert kernels(program)[0].config["vector"] and "win_kv" in program.source
    check(task, program, tmp_path)


@pytest.mark.parametrize("steps", [[TILE], [TILE, "vectorize"]])
def test_tile_and_vector_forms_propagate_nan_and_take_fp16(steps, tmp_path):
    module = "nn.MaxPool2d(3, 2, 1, return_indices=True)" if steps == [TILE] else "nn.MaxPool2d(3, 2, 1)"
    task = pool_task(module, nan=True)
    module_ = import_program(formed(task, steps).source, tmp_path, "nan")
    sizes = task.sizes("cpu")[0]
    x = task.make_inputs(seed=1, sizes=sizes)[0]
    with torch.no_grad():
        expected, got = task.make_model(sizes=sizes)(x), module_.ModelNew()(x)
    expected = expected if isinstance(expected, tuple) else (expected,)
    got = got if isinstance(got, tuple) else (got,)
    assert expected[0].isnan().any() and not expected[0].isnan().all()
    for e, g in zip(expected, got, strict=True):
        torch.testing.assert_close(g, e, equal_nan=True)
    task = pool_task("nn.AvgPool2d(3, 2, 1, ceil_mode=True)", dtype="float16")
    check(task, formed(task, steps), tmp_path, tag="fp16")


@pytest.mark.parametrize("nd, module, forward", [
    # the per-channel scale is loaded once per output (a plane's one number in 2-D), padding stays 0
    (2, "nn.AvgPool2d(3, 2, 1)", "self.pool(x * self.scale + 3.0)"),
    (1, "nn.MaxPool1d(2, stride=1, padding=1)", "self.pool(x - 4.0) * self.scale"),
    (3, "nn.MaxPool3d(2, 2, 1, return_indices=True)", "self.pool(torch.relu(x) * self.scale)[1]"),
    (3, "nn.AvgPool3d(3, 2, 1)", "torch.tanh(self.pool(torch.relu(x) * self.scale)) + self.scale"),
])
@pytest.mark.parametrize("steps", [[TILE], [TILE, "vectorize"]], ids=["tile", "vector"])
def test_fused_prologue_and_epilogue_in_the_tile_forms(nd, module, forward, steps, tmp_path):
    task = pool_task(module, forward, nd=nd)
    fused = fuse_all(task, coder.apply(task, None, PORT))
    if "return_indices" in module and "vectorize" in steps:  # a reduced tap loses its position
        with pytest.raises(CoderError):
            formed(task, steps, fused)
        return
    program = formed(task, steps, fused)
    assert [k.kind for k in kernels(program)] == ["pool"]
    assert len(kernels(program)[0].body) > 3  # something was fused
    check(task, program, tmp_path)


@pytest.mark.parametrize("nd, module, steps", [
    (1, "nn.MaxPool1d(3, stride=2, padding=1, dilation=2, ceil_mode=True, return_indices=True)", [TILE]),
    (3, "nn.AvgPool3d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)", [TILE]),
    (2, "nn.AdaptiveAvgPool2d((5, 3))", [TILE]),
    (3, "nn.MaxPool3d((2, 3, 2), stride=(1, 2, 2), dilation=(2, 1, 1))", [TILE, "vectorize"]),
])
def test_tile_forms_with_64_bit_indices(nd, module, steps, tmp_path):
    task = pool_task(module, nd=nd)
    check_wide(task, formed(task, steps), tmp_path, "wide")


def test_menu_offers_tiles_everywhere_and_vector_taps_where_they_apply(tmp_path):
    task = pool_task("nn.MaxPool2d(3, 2, 1)")
    flat = formed(task, ["tile BLOCK=512"])  # the port's form here is the rows form (test_template_pool_rows)
    legal = [str(s) for s in coder.legal_strategies(task, flat)]
    assert {"tile BLOCK=256", "tile BLOCK_M=8 BLOCK_N=128", "vectorize"} <= set(legal)
    for module, nd in (("nn.MaxPool2d(3, 2, 1, return_indices=True)", 2), ("nn.AdaptiveAvgPool1d(4)", 1)):
        other = pool_task(module, nd=nd)
        other_legal = [str(s) for s in coder.legal_strategies(other, coder.apply(other, None, PORT))]
        assert "vectorize" not in other_legal and any(s.startswith("tile BLOCK_M=") for s in other_legal)
        with pytest.raises(CoderError):
            formed(other, ["vectorize"])
    vector = formed(task, ["vectorize"], flat)
    cfg = kernels(vector)[0].config
    assert cfg["form"] == "tile" and cfg["vector"] and cfg["BLOCK"] == cfg["BLOCK_M"] * cfg["BLOCK_N"]
    assert "vectorize" not in [str(s) for s in coder.legal_strategies(task, vector)]
    back = formed(task, ["tile BLOCK=256"], vector)  # back to the flat form, without vector taps
    assert kernels(back)[0].config == {"BLOCK": 256, "num_warps": 4, "form": "flat"}
    assert "win_kv" not in back.source and "plane_tiles" not in back.source
    for bad in ("tile BLOCK_M=3 BLOCK_N=8", "tile BLOCK_M=128 BLOCK_N=128", "tile BLOCK_M=8"):
        with pytest.raises(CoderError):
            formed(task, [bad])
    check(task, back, tmp_path)


def test_tile_form_autotunes_over_tiles(tmp_path):
    task = pool_task("nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True)")
    program = formed(task, [TILE])
    space = pool_emit.tuning_space(kernels(program)[0])
    assert space[0] == {"BLOCK_M": 4, "BLOCK_N": 8, "num_warps": 4}
    assert len(space) == len({tuple(sorted(c.items())) for c in space}) > 1
    assert all(set(c) == {"BLOCK_M", "BLOCK_N", "num_warps"} for c in space)
    tuned = formed(task, ["autotune"], program)
    assert "@triton.autotune" in tuned.source and "meta['BLOCK_M']" in tuned.source
    check(task, tuned, tmp_path)
