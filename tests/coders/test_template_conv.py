"""The template coder's Triton convolutions (coders/template/conv_lower.py, emit/conv.py) against
PyTorch on the CPU interpreter: the geometry (stride x padding x dilation x groups x bias, 1d / 2d /
3d, asymmetric kernels, "same" / "valid"), fused epilogues, the conv menu and autotune configs."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from coders.template import TemplateCoder, steps
from coders.template.emit import conv as conv_emit
from coders.template.emit.module import generate
from coders.template.ir import ProgramIR
from mtmc.program import Program
from mtmc.protocols import CoderError
from mtmc.strategies import PORT, Strategy
from mtmc.tasks import Task, load_task
from tests.coders.test_template import check, import_program, sample

TASKS = Path(__file__).parent / "tasks" / "conv"
coder = TemplateCoder()

# One conv call per task, its geometry fixed in the source; C_IN, C_OUT and the spatial extents
# vary with the sizes (the program reads them at run time).
GEOMETRY_SOURCE = '''
import torch
import torch.nn as nn
import torch.nn.functional as F

B, C_IN, C_OUT, S = {defaults}


class Model(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.Conv{nd}d(c_in, c_out, {kernel}, {args})

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(B, C_IN, {spatial})]


def get_init_inputs():
    return [C_IN, C_OUT]


MTMC = {{"cpu_sizes": {sizes}}}
'''

SPATIAL = {1: "S + 4", 2: "S, S - 2", 3: "S - 4, S - 3, S - 5"}
ONE_SIZE = [{"B": 2, "C_IN": 3, "C_OUT": 5, "S": 9}]
TWO_SIZES = ONE_SIZE + [{"B": 1, "C_IN": 4, "C_OUT": 4, "S": 8}]

# (spatial dims, kernel, constructor arguments, sizes): every geometry feature at least once
GEOMETRIES = [
    (2, 3, "padding=1", TWO_SIZES),
    (2, (3, 2), "stride=(2, 1), padding=(1, 0), bias=False", ONE_SIZE),
    (2, 3, "stride=2, dilation=2, padding=2", ONE_SIZE),
    (2, (2, 4), "padding='same', dilation=(2, 1)", TWO_SIZES),
    (2, 3, "padding='valid', stride=(1, 3)", ONE_SIZE),
    (1, 5, "stride=3, padding=2, dilation=1", TWO_SIZES),
    (1, 4, "padding='same', bias=False", ONE_SIZE),
    (3, (2, 3, 1), "stride=(1, 2, 1), padding=(1, 0, 1), dilation=(2, 1, 1)", ONE_SIZE),
]
GROUPED = [  # channels are multiples of the groups: sizes of their own
    (2, 3, "groups=2, padding=1", [{"B": 2, "C_IN": 4, "C_OUT": 6, "S": 9}]),
    (2, 3, "groups=4, stride=2, bias=False", [{"B": 2, "C_IN": 4, "C_OUT": 4, "S": 9}]),  # depthwise
    (1, 3, "groups=3, padding='same'", [{"B": 2, "C_IN": 3, "C_OUT": 6, "S": 7}]),  # multiplier 2
    (3, 2, "groups=2, padding=1, dilation=2", [{"B": 1, "C_IN": 2, "C_OUT": 2, "S": 9}]),
]


def geometry_task(nd: int, kernel, args: str, sizes: list[dict]) -> Task:
    defaults = ", ".join(str(sizes[0][k]) for k in ("B", "C_IN", "C_OUT", "S"))
    source = GEOMETRY_SOURCE.format(nd=nd, kernel=kernel, args=args, spatial=SPATIAL[nd], sizes=sizes,
                                    defaults=defaults)
    return Task(name=f"conv{nd}d_geometry", source=source)


def kernels(program: Program) -> list:
    return ProgramIR.from_dict(program.metadata["template_ir"]).kernels()


@pytest.mark.parametrize("nd, kernel, args, sizes", GEOMETRIES + GROUPED)
def test_conv_geometry_matches_pytorch(nd, kernel, args, sizes, tmp_path):
    task = geometry_task(nd, kernel, args, sizes)
    program = coder.apply(task, None, PORT)
    assert [k.kind for k in kernels(program)] == ["conv"]
    check(task, program, tmp_path)


# Groups of 17 to 20 input channels: two channel blocks of 16 per tap, the second partly masked
WIDE = [
    (2, 3, "stride=2, padding=1, dilation=2", [{"B": 2, "C_IN": 18, "C_OUT": 5, "S": 7}]),
    (1, 4, "padding='same', groups=2, bias=False", [{"B": 1, "C_IN": 40, "C_OUT": 6, "S": 5}]),
    (3, (2, 3, 1), "stride=(2, 1, 1), padding=(0, 1, 1), dilation=(1, 1, 2)",
     [{"B": 1, "C_IN": 17, "C_OUT": 3, "S": 8}]),
]
GEMM_GEOMETRIES = GEOMETRIES + GROUPED[:1] + WIDE  # the implicit-GEMM ones (GROUPED[1:] are direct)


def configured(task: Task, **config) -> Program:
    """The port with the conv kernel's configuration overridden."""
    ir = ProgramIR.from_dict(coder.apply(task, None, PORT).metadata["template_ir"])
    ir.kernels()[0].config.update(config)
    return Program(generate(task, ir))


@pytest.mark.parametrize("nd, kernel, args, sizes", GEMM_GEOMETRIES)
def test_tap_loop_matches_pytorch_at_odd_sizes(nd, kernel, args, sizes, tmp_path):
    """The taps-outside K loop on a channels-last input (the port's choice for wide groups) over
    every geometry, with blocks of 16: several pixel, channel and channel-block tiles, masked rows
    at the padding and masked channels past C_in/groups."""
    task = geometry_task(nd, kernel, args, sizes)
    program = configured(task, k_loop="taps", channels_last=True, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
    assert "c_blocks = tl.cdiv(CIG, BLOCK_K)" in program.source
    assert "_cl = " in program.source  # the channels-last copy of the input (rounded or not)
    assert "k % CIG" not in program.source  # no per-element div/mod in the tap loop
    check(task, program, tmp_path)


@pytest.mark.parametrize("channels_last", [False, True])
@pytest.mark.parametrize("nd, kernel, args, sizes", WIDE)
def test_tap_loop_on_either_input_layout_matches_pytorch(nd, kernel, args, sizes, channels_last, tmp_path):
    task = geometry_task(nd, kernel, args, sizes)
    program = configured(task, k_loop="taps", channels_last=channels_last, BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
    check(task, program, tmp_path)


@pytest.mark.parametrize("channels_last", [True, False])
def test_tf32_round_rounds_both_operands_to_nearest_before_the_dot(channels_last, tmp_path):
    """With tf32_round the conv is that of TF32-rounded (to nearest) input and weight: equal to it in
    float64 up to fp32 summation, and off the plain fp32 conv by TF32's error. A channels-last conv
    rounds in the launcher's copies (emit/conv_pack.py), a conv on NC* in the kernel's tiles."""
    nd, kernel, args, _ = WIDE[0]
    sizes = {"B": 2, "C_IN": 20, "C_OUT": 6, "S": 9}
    task = geometry_task(nd, kernel, args, [sizes])
    program = configured(task, k_loop="taps", channels_last=channels_last, BLOCK_M=16, BLOCK_N=16,
                         BLOCK_K=16, precision="tf32", tf32_round=True)
    packs = program.source.count("= _tf32_pack(")
    assert (packs, program.source.count("+ 0x1000) & 0xFFFFE000")) == ((2, 1) if channels_last else (0, 2))
    reference, candidate, x = reference_and_candidate(task, import_program(program.source, tmp_path, "round"),
                                                      sizes)
    with torch.no_grad():
        got = candidate(x).double()
        conv = reference.conv
        rounded = conv._conv_forward(tf32_nearest(x).double(), tf32_nearest(conv.weight).double(),
                                     None if conv.bias is None else conv.bias.double())
        plain = reference(x).double()
    assert (got - rounded).abs().max() < 1e-5
    assert (got - plain).abs().max() > 1e-4  # the rounding happened


def reference_and_candidate(task: Task, module, sizes: dict) -> tuple:
    """The task's model, the program's ModelNew with its weights, and the one input, at `sizes`."""
    for key, value in sizes.items():
        setattr(module, key, value)
    reference = task.make_model(seed=0, sizes=sizes)
    candidate = module.ModelNew(*task.init_inputs(sizes))
    candidate.load_state_dict(reference.state_dict())
    (x,) = task.make_inputs(seed=1, sizes=sizes)
    return reference, candidate, x


def tf32_nearest(t: torch.Tensor) -> torch.Tensor:
    """fp32 to TF32's 10-bit mantissa, to nearest, ties away from zero (finite values)."""
    return ((t.detach().view(torch.int32) + 0x1000) & -0x2000).view(torch.float32)


@pytest.mark.parametrize("nd, kernel, args, sizes", WIDE)
def test_flat_loop_matches_pytorch_with_several_channel_blocks(nd, kernel, args, sizes, tmp_path):
    task = geometry_task(nd, kernel, args, sizes)
    program = configured(task, k_loop="flat", BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
    assert "chan = k % CIG" in program.source
    check(task, program, tmp_path)


def test_port_takes_the_tap_loop_for_wide_groups_fma_for_narrow_ones_and_flat_for_1x1():
    loops = {}
    pointwise = (2, 1, "stride=2", [{"B": 1, "C_IN": 24, "C_OUT": 5, "S": 7}])
    for nd, kernel, args, sizes in GEOMETRIES[:1] + WIDE[:2] + [pointwise]:
        (conv,) = kernels(coder.apply(geometry_task(nd, kernel, args, sizes), None, PORT))
        loops[sizes[0]["C_IN"]] = (conv.config["k_loop"], conv.config.get("channels_last", False),
                                   conv.config["BLOCK_K"])
    # 3 channels: FMA outer products on the NC* input (emit/conv_fma.py); 18 and 20 per group: taps
    # on a channels-last copy, a channel block of 32 at most (BLOCK_K >= 16 for a dot); a 1x1
    # kernel (24 channels): flat
    assert loops == {3: ("fma", False, 16), 18: ("taps", True, 32), 40: ("taps", True, 32),
                     24: ("flat", False, 32)}


def test_depthwise_conv_takes_the_direct_form_and_others_the_implicit_gemm():
    forms = {}
    for nd, kernel, args, sizes in GROUPED[:3]:
        (conv,) = kernels(coder.apply(geometry_task(nd, kernel, args, sizes), None, PORT))
        forms[args] = conv.space["form"]
    assert forms == {"groups=2, padding=1": "gemm", "groups=4, stride=2, bias=False": "direct",
                     "groups=3, padding='same'": "direct"}


@pytest.mark.parametrize("name", ["conv2d_bias_relu", "conv1d_depthwise_same", "conv3d_groups_fp16",
                                  "conv2d_bn_eval"])
def test_fused_epilogue_is_one_kernel_and_matches(name, tmp_path):
    task = load_task(TASKS / f"{name}.py")
    program = coder.apply(task, None, PORT)
    check(task, program, tmp_path, tag="port")
    while Strategy.parse("fuse epilogue") in coder.legal_strategies(task, program):
        program = coder.apply(task, program, Strategy.parse("fuse epilogue"))
    assert [k.kind for k in kernels(program)] == ["conv"]
    check(task, program, tmp_path, tag="fused")


@pytest.mark.parametrize("name", ["conv2d_bias_relu", "conv1d_depthwise_same"])
def test_sampled_legal_steps_of_the_conv_menu_match(name, tmp_path):
    task = load_task(TASKS / f"{name}.py")
    program = coder.apply(task, None, PORT)
    legal = coder.legal_strategies(task, program)
    kinds = {s.kind for s in legal}
    assert {"tile", "num_warps", "num_stages", "autotune"} <= kinds
    assert len(legal) <= 40
    for i, strategy in enumerate(sample(legal)):
        if strategy.kind in ("autotune",):
            continue  # its own test below
        check(task, coder.apply(task, program, strategy), tmp_path, tag=f"s{i}")


def test_fp32_conv_starts_tf32_as_eager_cudnn_does_and_takes_the_precision_steps():
    """cuDNN runs fp32 convolutions on TF32 by default, so a conv kernel may, though the task
    lists no reduced precision (steps.tf32_allowed)."""
    task = load_task(TASKS / "conv2d_bias_relu.py")
    assert "tf32" not in task.precisions
    program = coder.apply(task, None, PORT)
    assert kernels(program)[0].config["precision"] == "tf32"
    assert 'input_precision="tf32"' in program.source
    legal = coder.legal_strategies(task, program)
    assert {Strategy.parse("precision ieee"), Strategy.parse("precision tf32x3")} <= set(legal)
    tuned = coder.apply(task, program, Strategy.parse("precision tf32x3"))
    assert 'input_precision="tf32x3"' in tuned.source
    assert Strategy.parse("precision tf32") in coder.legal_strategies(task, tuned)


def test_matmuls_stay_strict_unless_the_task_allows_tf32():
    """Eager matmuls run strict fp32 (torch.backends.cuda.matmul.allow_tf32 is False): the port's
    tf32x3 is fp32-accurate; ieee (FMA dots) is a step, tf32 only where the task allows it."""
    task = load_task(Path(__file__).parent / "tasks" / "linear_gelu.py")
    assert "tf32" not in task.precisions
    program = coder.apply(task, None, PORT)
    assert {k.config.get("precision") for k in kernels(program) if k.kind == "matmul"} == {"tf32x3"}
    legal = coder.legal_strategies(task, program)
    assert Strategy.parse("precision ieee") in legal
    assert Strategy.parse("precision tf32x3") not in legal  # the port's already: no change
    assert Strategy.parse("precision tf32") not in legal
    with pytest.raises(CoderError, match="does not allow tf32"):
        coder.apply(task, program, Strategy.parse("precision tf32"))
    source = task.source.replace("MTMC = {", 'MTMC = {"precision": ["tf32"], ')
    allowing = Task(name="linear_gelu_tf32", source=source)
    assert allowing.precisions == ("tf32",)
    port = coder.apply(allowing, None, PORT)
    assert Strategy.parse("precision tf32") in coder.legal_strategies(allowing, port)


CONV_LINEAR_SOURCE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(16, 4, 3)  # 16 channels: a dot loop (3 would take FMAs, no precision)
        self.fc = nn.Linear(4 * 5 * 5, 6)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).flatten(1))


def get_inputs():
    return [torch.randn(2, 16, 7, 7)]


def get_init_inputs():
    return []
'''


def test_a_tf32_step_reaches_the_convs_of_a_strict_task_and_not_its_matmuls(tmp_path):
    task = Task(name="conv_linear", source=CONV_LINEAR_SOURCE)

    def precisions(program: Program) -> dict[str, str]:
        return {k.kind: k.config["precision"] for k in kernels(program) if k.kind in ("conv", "matmul")}

    program = coder.apply(task, None, PORT)
    assert precisions(program) == {"conv": "tf32", "matmul": "tf32x3"}
    program = coder.apply(task, program, Strategy.parse("precision tf32x3"))
    assert precisions(program) == {"conv": "tf32x3", "matmul": "tf32x3"}
    program = coder.apply(task, program, Strategy.parse("precision tf32"))
    assert precisions(program) == {"conv": "tf32", "matmul": "tf32x3"}
    check(task, program, tmp_path)


@pytest.mark.parametrize("name", ["conv2d_bn_eval", "conv1d_depthwise_same"])
def test_autotuned_conv_configs_are_valid_and_match(name, tmp_path):
    task = load_task(TASKS / f"{name}.py")
    program = coder.apply(task, None, PORT)
    program = coder.apply(task, program, Strategy.parse("fuse epilogue"))
    program = coder.apply(task, program, Strategy.parse("autotune"))
    (conv,) = kernels(program)
    configs = conv_emit.tuning_space(conv)
    assert configs[0] == {k: conv.config[k] for k in configs[0]}  # the current config first
    assert len(configs) == len({tuple(sorted(c.items())) for c in configs}) >= 4
    for cfg in configs:
        assert all(cfg[k] >= 16 for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K") if k in cfg)
    check(task, program, tmp_path)


def test_tiny_tiles_walk_several_k_blocks(tmp_path):
    """Blocks of 16: several pixel and channel tiles and K blocks, the last ones partly masked."""
    task = load_task(TASKS / "conv2d_bias_relu.py")
    ir = ProgramIR.from_dict(coder.apply(task, None, PORT).metadata["template_ir"])
    ir.kernels()[0].config.update(BLOCK_M=16, BLOCK_N=16, BLOCK_K=16)
    check(task, Program(generate(task, ir)), tmp_path)


def test_cost_model_counts_conv_flops():
    task = load_task(TASKS / "conv2d_bn_eval.py")
    ir = ProgramIR.from_dict(coder.apply(task, None, PORT).metadata["template_ir"])
    conv = next(k for k in ir.kernels() if k.kind == "conv")
    b, c_in, c_out, h, w = 8, 16, 32, 32, 32  # the file's sizes, 3x3 'same'
    assert steps.conv_flops(ir, conv) == 2 * b * c_out * h * w * c_in * 9
    assert steps.dominant(ir) is conv
    assert steps.programs(ir, conv) == -(-(b * h * w) // conv.config["BLOCK_M"]) * \
        -(-c_out // conv.config["BLOCK_N"])


def test_other_padding_modes_are_refused_clearly():
    source = geometry_task(2, 3, "padding=1, padding_mode='reflect'", ONE_SIZE).source
    with pytest.raises(CoderError, match="padding_mode='reflect'"):
        coder.apply(Task(name="conv_reflect", source=source), None, PORT)


def test_half_inputs_accumulate_in_fp32(tmp_path):
    task = load_task(TASKS / "conv3d_groups_fp16.py")
    program = coder.apply(task, None, PORT)
    assert "acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)" in program.source
    assert torch.float16 == task.make_inputs(0, task.sizes("cpu")[0])[0].dtype


def test_library_step_keeps_the_epilogue_in_triton_and_is_not_offered_for_a_bare_conv(tmp_path):
    def allowing(source: str) -> str:
        return source.replace('MTMC = {"cpu_sizes"', 'MTMC = {"library": ["conv2d"], "cpu_sizes"')

    with_bias = allowing(geometry_task(2, 3, "padding=1", ONE_SIZE).source)
    bare = allowing(geometry_task(2, 3, "padding=1, bias=False", ONE_SIZE).source)
    library = Strategy.parse("library conv2d")
    task = Task(name="conv_library", source=with_bias)
    assert task.library_ops == ("conv2d",)
    program = coder.apply(task, None, PORT)
    assert library in coder.legal_strategies(task, program)
    vendor = coder.apply(task, program, library)
    assert [k.kind for k in kernels(vendor)] == ["pointwise"]  # the bias add
    check(task, vendor, tmp_path)
    task = Task(name="conv_library_bare", source=bare)
    program = coder.apply(task, None, PORT)
    assert library not in coder.legal_strategies(task, program)
    with pytest.raises(CoderError, match="no Triton kernel"):
        coder.apply(task, program, library)


FUNCTIONAL_SOURCE = '''
import torch
import torch.nn as nn

B, C_IN, C_OUT, L = 2, 3, 5, 13


class Model(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(c_out, c_in, 3))
        self.bias = nn.Parameter(torch.randn(c_out))

    def forward(self, x):
        return torch.conv1d(x, self.weight, self.bias, 2, "valid") * 0.5


def get_inputs():
    return [torch.randn(B, C_IN, L)]


def get_init_inputs():
    return [C_IN, C_OUT]


MTMC = {"cpu_sizes": [{"B": 2, "C_IN": 3, "C_OUT": 5, "L": 13}, {"B": 1, "C_IN": 2, "C_OUT": 7, "L": 8}]}
'''


def test_torch_conv_call_with_positional_arguments(tmp_path):
    task = Task(name="conv1d_functional", source=FUNCTIONAL_SOURCE)
    program = coder.apply(task, None, PORT)
    program = coder.apply(task, program, Strategy.parse("fuse epilogue"))
    assert [k.kind for k in kernels(program)] == ["conv"]
    check(task, program, tmp_path)


DEEP_SOURCE = '''
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        c = {channels}
        self.convs = nn.Sequential(*[nn.Conv2d(c, c, 3, padding=1) for _ in range({layers})])

    def forward(self, x):
        return self.convs(x)

def get_inputs():
    return [torch.randn(1, {channels}, 6, 5)]

def get_init_inputs():
    return []
'''


@pytest.mark.parametrize("layers", [2, 8])
def test_deep_tf32_programs_round_their_convs_and_shallow_ones_truncate(layers, tmp_path):
    """conv_lower.DEEP_TF32_CONVS: 8 TF32 convs in one program turn on tf32_round for all of them
    (truncation's error adds up through a deep network), fewer keep the faster truncation. These
    have 12 channels: the flat loop on NC*, which would round in the kernel."""
    path = tmp_path / f"deep{layers}.py"
    path.write_text(DEEP_SOURCE.format(layers=layers, channels=12))
    task = load_task(path)
    program = coder.apply(task, None, PORT)
    convs = [k for k in kernels(program) if k.kind == "conv"]
    assert len(convs) == layers and all(k.config["k_loop"] == "flat" for k in convs)
    assert all(k.config.get("tf32_round", False) == (layers >= 8) for k in convs)
    check(task, program, tmp_path)


def test_channels_last_tf32_convs_round_in_their_copies_at_any_depth(tmp_path):
    """A channels-last conv (16 channels, 3x3: the taps loop) rounds as it is packed, which costs the
    kernel nothing, so even one conv rounds; the kernel's tiles are not rounded again."""
    path = tmp_path / "shallow.py"
    path.write_text(DEEP_SOURCE.format(layers=2, channels=16))
    task = load_task(path)
    program = coder.apply(task, None, PORT)
    convs = [k for k in kernels(program) if k.kind == "conv"]
    assert all(k.config["channels_last"] and k.config["tf32_round"] for k in convs)
    assert program.source.count("= _tf32_pack(") == 4  # input and weight of each conv
    assert "+ 0x1000) & 0xFFFFE000" in program.source  # once: the pack kernel
    assert program.source.count("+ 0x1000) & 0xFFFFE000") == 1
    check(task, program, tmp_path)
