"""A global average pool fused into the transposed conv kernel before it (fuse/pooled.py's takes_mean,
emit/conv_mean.py through emit/conv_transpose.py): each image's rows of the tile summed and added
atomically into a zeroed [N, C_out] output. Small odd sizes (a 7 x 6 input, stride 2: a 13 x 11 output,
143 pixels a plane, the largest stride phase 7 x 6 = 42 rows an image: no BLOCK_M divides either, so
tiles straddle images in both forms), against PyTorch in the CPU interpreter."""

from __future__ import annotations

import pytest

from coders.template import fuse
from coders.template.emit.module import generate
from coders.template.ir import ProgramIR
from mtmc.program import Program
from mtmc.strategies import Strategy
from mtmc.tasks import Task
from tests.coders.conv_fusion import coder, fused, ieee_port, kernels
from tests.coders.test_template import check
from tests.coders.test_template_conv_mean import mean_task as conv_mean_task

SIZES = [{"B": 3, "C_IN": 5, "C_OUT": 7, "H": 7, "W": 6}]
STRIDED = ", stride=2, padding=1"
POOL = "return F.adaptive_avg_pool2d(x, 1).squeeze(-1).squeeze(-1)"


def mean_task(body: str = POOL, nd: int = 2, args: str = STRIDED, sizes=None) -> Task:
    return conv_mean_task(body, nd, args, sizes or SIZES, conv="ConvTranspose", before="self.conv(x) * 0.5",
                          depth="H - 2")


def meaning_conv(program: Program):
    conv = kernels(program)[0]
    assert conv.kind == "conv_transpose" and conv.space.get("spatial_mean")
    assert "tl.atomic_add(" in program.source and "dtype=torch.float32)" in program.source
    return conv


@pytest.mark.parametrize("body", [
    POOL,
    "return x.mean(dim=[2, 3], keepdim=True)",
    "return torch.sum(x, dim=(2, 3))",
    # 44_'s: a global pool, then pools of the [N, C, 1, 1] means (left as kernels of their own)
    "x = torch.mean(x, dim=[2, 3], keepdim=True)\n        x = torch.mean(x, dim=[2, 3], keepdim=True)\n"
    "        return torch.mean(x)",
])
def test_a_global_mean_fuses_into_the_transposed_conv_and_matches(body, tmp_path):
    task = mean_task(body)
    port = ieee_port(task)
    assert [k.kind for k in kernels(port)][:3] == ["conv_transpose", "pointwise", "reduce"]
    program = fused(task, port)
    meaning_conv(program)
    assert len(kernels(program)) == len(kernels(port)) - 2  # the multiply and the first mean
    check(task, program, tmp_path)


@pytest.mark.parametrize("config", [
    {"BLOCK_M": 16}, {"BLOCK_M": 32}, {"BLOCK_M": 64}, {"BLOCK_M": 256},
    {"phases": False, "BLOCK_M": 32}, {"phases": False, "BLOCK_M": 256},
    {"live_taps": False, "BLOCK_M": 32},
    {"grouped_programs": True, "BLOCK_M": 32},
    {"k_loop": "fma", "BLOCK_M": 16},
])
def test_tiles_straddling_images_in_either_form_add_each_image_apart(config, tmp_path):
    """42 rows an image in the stride-phase form, 143 in the plain one: 16 to 64-row tiles straddle
    two images, 256-row ones up to seven."""
    task = mean_task()
    ir = ProgramIR.from_dict(fused(task, ieee_port(task)).metadata["template_ir"])
    ir.kernels()[0].config.update(config)
    check(task, Program(generate(task, ir)), tmp_path)


def test_the_tf32_port_fuses_too(tmp_path):
    task = mean_task()
    program = fused(task, coder.apply(task, None, Strategy.parse("port")))
    meaning_conv(program)
    check(task, program, tmp_path)


def test_two_sizes_a_grouped_and_a_3d_transposed_conv(tmp_path):
    sizes = SIZES + [{"B": 2, "C_IN": 4, "C_OUT": 6, "H": 5, "W": 9}]
    grouped = mean_task("return x.mean([2, 3], keepdim=True)", args=STRIDED + ", groups=2",
                        sizes=[{"B": 3, "C_IN": 4, "C_OUT": 6, "H": 7, "W": 6}] + sizes[1:])
    program = fused(grouped, ieee_port(grouped))
    meaning_conv(program)
    check(grouped, program, tmp_path, "g")
    task = mean_task("return F.adaptive_avg_pool3d(x, 1).flatten(1)", nd=3, args=", stride=(1, 2, 2)",
                     sizes=[{"B": 2, "C_IN": 3, "C_OUT": 5, "H": 5, "W": 4}])
    program = fused(task, ieee_port(task))
    meaning_conv(program)
    check(task, program, tmp_path, "3d")


def test_training_batch_norm_keeps_the_conv_output_and_its_mean_apart(tmp_path):
    """77_'s shape: the pool reads the batch norm's output, which needs the whole conv output's
    statistics first: the mean stays a kernel of its own."""
    task = mean_task("return F.adaptive_avg_pool2d(self.bn(x), 1)")
    task = Task(name=task.name, source=task.source.replace(
        "super().__init__()", "super().__init__()\n        self.bn = nn.BatchNorm2d(c_out)"))
    for strategy in ("fuse epilogue", "fuse all"):
        program, step = ieee_port(task), Strategy.parse(strategy)
        while step in coder.legal_strategies(task, program):
            program = coder.apply(task, program, step)
        assert not any(k.space.get("spatial_mean") for k in kernels(program))
        assert kernels(program)[-1].kind == "reduce"
        check(task, program, tmp_path, strategy.replace(" ", "_"))


def test_what_keeps_the_mean_apart(tmp_path):
    task = mean_task("return x.mean([2, 3]), x * 2.0")
    ir = ProgramIR.from_dict(fused(task, ieee_port(task)).metadata["template_ir"])
    conv = next(k for k in ir.kernels() if k.kind == "conv_transpose")
    reduce = next(k for k in ir.kernels() if k.kind == "reduce")
    with pytest.raises(fuse.NotFusable, match="writes the means only"):
        fuse.merge(ir, conv, reduce)
    check(task, fused(task, ieee_port(task)), tmp_path)
