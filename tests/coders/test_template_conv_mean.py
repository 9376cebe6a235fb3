"""A global average pool fused into the conv kernel before it (fuse/pooled.py's takes_mean,
emit/conv_mean.py): each image's rows of the conv tile summed and added atomically into a zeroed
[N, C_out] output. Small odd sizes (13 x 11 input, 11 x 9 = 99 pixels a plane: no BLOCK_M divides
it, so tiles straddle images), against PyTorch in the CPU interpreter."""

from __future__ import annotations

import pytest

from coders.template import fuse
from coders.template.emit.module import generate
from coders.template.exact_fp32 import exact_fp32
from coders.template.ir import ProgramIR
from mtmc.program import Program
from mtmc.strategies import Strategy
from mtmc.tasks import Task
from tests.coders.conv_fusion import coder, fused, ieee_port, kernels
from tests.coders.test_template import check

SOURCE = '''
import torch
import torch.nn as nn
import torch.nn.functional as F

B, C_IN, C_OUT, H, W = {defaults}


class Model(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.{conv}{nd}d(c_in, c_out, 3{args})

    def forward(self, x):
        x = {before}
        {body}


def get_inputs():
    return [torch.randn(B, C_IN, {spatial})]


def get_init_inputs():
    return [C_IN, C_OUT]


MTMC = {{"cpu_sizes": {sizes}}}
'''

SIZES = [{"B": 3, "C_IN": 5, "C_OUT": 7, "H": 13, "W": 11}]
POOL = "return F.adaptive_avg_pool2d(x, 1).squeeze(-1).squeeze(-1)"


def mean_task(body: str = POOL, nd: int = 2, args: str = "", sizes=None, conv: str = "Conv",
              before: str = "F.gelu(self.conv(x))", depth: str = "H - 4") -> Task:
    """A conv, `before` (the ops on its output) and `body` (the pool); conv="ConvTranspose" for the
    transposed form's tests (test_template_conv_transpose_mean.py). `depth`: a 3-D input's first dim."""
    sizes = sizes or SIZES
    defaults = ", ".join(str(sizes[0][k]) for k in ("B", "C_IN", "C_OUT", "H", "W"))
    spatial = {2: "H, W", 3: f"{depth}, H, W"}[nd]
    source = SOURCE.format(nd=nd, args=args, body=body, spatial=spatial, sizes=sizes, defaults=defaults,
                           conv=conv, before=before)
    return Task(name=f"{conv.lower()}_mean", source=source)


def assert_one_meaning_conv(program: Program) -> None:
    (conv,) = kernels(program)
    assert conv.kind == "conv" and conv.space.get("spatial_mean")
    assert "tl.atomic_add(" in program.source and "torch.zeros((n_batch, C_out" in program.source


@pytest.mark.parametrize("body", [
    POOL,
    "return x.mean(dim=[2, 3], keepdim=True)",
    "return x.mean([2, 3])",
    "return torch.sum(x, dim=(2, 3))",
    "return F.adaptive_avg_pool2d(x, (1, 1))",
])
def test_a_global_mean_fuses_into_the_conv_and_matches(body, tmp_path):
    task = mean_task(body)
    port = ieee_port(task)
    assert [k.kind for k in kernels(port)] == ["conv", "pointwise", "reduce"]
    program = fused(task, port)
    assert_one_meaning_conv(program)
    check(task, program, tmp_path)


@pytest.mark.parametrize("block_m", [16, 32, 64, 128, 256])
def test_tiles_straddling_two_or_more_images_add_each_image_apart(block_m, tmp_path):
    """99 pixels a plane: 16 to 64-row tiles straddle two images, 128 and 256-row ones up to four."""
    task = mean_task()
    ir = ProgramIR.from_dict(fused(task, ieee_port(task)).metadata["template_ir"])
    ir.kernels()[0].config.update(BLOCK_M=block_m)
    check(task, Program(generate(task, ir)), tmp_path)


VARIANTS = [
    {"k_loop": "taps", "channels_last": True, "BLOCK_K": 16},
    {"k_loop": "flat", "BLOCK_M": 32, "BLOCK_K": 16},
    {"k_loop": "fma", "BLOCK_M": 16},
    {"k_loop": "runs", "BLOCK_M": 64, "BLOCK_K": 16},
    {"k_loop": "runs", "precision": "tf32", "tf32_round": True, "BLOCK_K": 32},
    {"split_rows": True, "BLOCK_M": 32},
]


@pytest.mark.parametrize("config", VARIANTS)
def test_every_k_loop_and_precision_takes_the_mean(config, tmp_path):
    task = mean_task(sizes=[{"B": 2, "C_IN": 8, "C_OUT": 7, "H": 9, "W": 8}])
    ir = ProgramIR.from_dict(fused(task, ieee_port(task)).metadata["template_ir"])
    ir.kernels()[0].config.update(config)
    check(task, Program(generate(task, ir)), tmp_path)


def test_the_tf32_port_and_its_exact_retry_fuse_too(tmp_path):
    """The port's TF32 conv takes the mean, and the exact-fp32 retry (coders/template/exact_fp32.py)
    keeps it (8 -> 16 channels: the port's TF32 runs loop, as 67_'s)."""
    task = mean_task(sizes=[{"B": 3, "C_IN": 8, "C_OUT": 16, "H": 13, "W": 11}])
    program = fused(task, coder.apply(task, None, Strategy.parse("port")))
    assert_one_meaning_conv(program)
    check(task, program, tmp_path)
    ir = exact_fp32(ProgramIR.from_dict(program.metadata["template_ir"]))
    assert 'input_precision="tf32"' not in generate(task, ir)
    assert ir.kernels()[0].space.get("spatial_mean")
    check(task, Program(generate(task, ir)), tmp_path, "exact")


def test_two_sizes_a_grouped_conv_and_a_3d_conv(tmp_path):
    sizes = SIZES + [{"B": 2, "C_IN": 4, "C_OUT": 6, "H": 7, "W": 10}]
    grouped = mean_task("return x.mean([2, 3], keepdim=True)", args=", groups=2",
                        sizes=[{"B": 3, "C_IN": 4, "C_OUT": 6, "H": 13, "W": 11}] + sizes[1:])
    program = fused(grouped, ieee_port(grouped))
    assert_one_meaning_conv(program)
    check(grouped, program, tmp_path, "g")
    task = mean_task("return x.mean([2, 3, 4])", nd=3,
                     sizes=[{"B": 2, "C_IN": 3, "C_OUT": 5, "H": 7, "W": 6}])
    program = fused(task, ieee_port(task))
    assert_one_meaning_conv(program)
    check(task, program, tmp_path, "3d")


def test_an_op_after_the_mean_stays_a_kernel_of_its_own(tmp_path):
    task = mean_task("return torch.sigmoid(x.mean([2, 3])) * 2.0")
    program = fused(task, ieee_port(task))
    assert [k.kind for k in kernels(program)] == ["conv", "pointwise"]
    assert kernels(program)[0].space.get("spatial_mean")
    check(task, program, tmp_path)


def refusal(task: Task) -> str:
    ir = ProgramIR.from_dict(fused(task, ieee_port(task)).metadata["template_ir"])
    conv = next(k for k in ir.kernels() if k.kind == "conv")
    reduce = next(k for k in ir.kernels() if k.kind == "reduce")
    with pytest.raises(fuse.NotFusable) as refused:
        fuse.merge(ir, conv, reduce)
    return str(refused.value)


@pytest.mark.parametrize("body, reason", [
    ("return x.mean([2, 3]), x * 2.0", "writes the means only"),
    ("return x.mean([3])", "a conv's epilogue reduces over exactly its output channels"),
    ("return x.amax([2, 3])", "one mean or sum over its pixels"),
])
def test_what_keeps_the_mean_apart(body, reason, tmp_path):
    task = mean_task(body)
    assert reason in refusal(task)
    check(task, fused(task, ieee_port(task)), tmp_path)


def test_the_library_step_leaves_a_meaning_conv_in_triton():
    task = mean_task()
    task = Task(name=task.name, source=task.source.replace('MTMC = {"cpu_sizes"',
                                                           'MTMC = {"library": ["conv2d"], "cpu_sizes"'))
    program = fused(task, ieee_port(task))
    assert Strategy.parse("library conv2d") not in coder.legal_strategies(task, program)
