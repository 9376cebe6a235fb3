"""A reduction over a conv's output channels fused into the conv kernel's epilogue (fuse/channels.py,
emit/channel_reduce.py): the steps that take it, the program it makes and what stays refused."""

from __future__ import annotations

import re

import pytest

from coders.template import fuse, steps
from coders.template.emit import conv as conv_emit
from coders.template.emit.module import generate
from coders.template.ir import ProgramIR
from mtmc.program import Program
from mtmc.protocols import CoderError
from mtmc.strategies import Strategy
from mtmc.tasks import Task
from tests.coders.conv_fusion import coder, fused, ieee_port, kernels
from tests.coders.test_template import check

SOURCE = '''
import torch
import torch.nn as nn

B, C_IN, C_OUT, S = {defaults}


class Model(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.{module}{nd}d(c_in, c_out, 3{args})
        self.shift = nn.Parameter(torch.randn(c_out, {ones}))

    def forward(self, x):
        x = self.conv(x) * 1.5 + self.shift
        {body}


def get_inputs():
    return [torch.randn(B, C_IN, {spatial})]


def get_init_inputs():
    return [C_IN, C_OUT]


MTMC = {{"cpu_sizes": {sizes}}}
'''

SPATIAL = {1: "S + 2", 2: "S, S - 2", 3: "S - 2, S - 1, S - 3"}
REDUCTIONS = {
    "min": "torch.min(x, dim=1, keepdim={keepdim})[0]",
    "max": "torch.max(x, dim=1, keepdim={keepdim})[0]",
    "amin": "torch.amin(x, dim=1, keepdim={keepdim})",
    "sum": "torch.sum(x, dim=1, keepdim={keepdim})",
    "mean": "x.mean(dim=1, keepdim={keepdim})",
    "logsumexp": "torch.logsumexp(x, dim=1, keepdim={keepdim})",
    "var": "torch.var(x, dim=1, keepdim={keepdim})",  # two dependent means, one in-tile pass
}
ONE_SIZE = [{"B": 2, "C_IN": 3, "C_OUT": 5, "S": 7}]


def reduce_task(nd: int, reduction: str, keepdim: bool = True, args: str = "", sizes=None,
                c_out: int = 5, body: str = "return torch.tanh({reduction})", module: str = "Conv") -> Task:
    """conv -> * 1.5 + shift -> `reduction` -> tanh (or `body`), traced at the first size (C_OUT =
    c_out unless given) and run at every size."""
    sizes = sizes or [{**ONE_SIZE[0], "C_OUT": c_out}]
    defaults = ", ".join(str(sizes[0][k]) for k in ("B", "C_IN", "C_OUT", "S"))
    forward = body.format(reduction=reduction.format(keepdim=keepdim))
    source = SOURCE.format(nd=nd, module=module, args=args, ones=", ".join(["1"] * nd), spatial=SPATIAL[nd],
                           sizes=sizes, defaults=defaults, body=forward)
    return Task(name=f"conv{nd}d_reduce", source=source)


def assert_one_reducing_conv(program: Program, reduction: str, kind: str = "conv") -> None:
    (conv,) = kernels(program)
    assert conv.kind == kind
    assert {"amin": "min", "logsumexp": "sum", "var": "mean"}.get(reduction, reduction) in conv.op_names()
    assert "tanh" in conv.op_names()
    assert [o.dims for o in conv.outputs] == [[0, *range(2, len(conv.space["traced"]))]]
    assert "axis=1, keep_dims=True" in program.source


@pytest.mark.parametrize("keepdim", [True, False])
@pytest.mark.parametrize("reduction", sorted(REDUCTIONS))
def test_conv2d_channel_reduction_fuses_into_one_kernel_and_matches(reduction, keepdim, tmp_path):
    task = reduce_task(2, REDUCTIONS[reduction], keepdim, args=", padding=1")
    port = ieee_port(task)
    assert [k.kind for k in kernels(port)][-2:] == ["reduce", "pointwise"]
    program = fused(task, port)
    assert_one_reducing_conv(program, reduction)
    check(task, program, tmp_path)


@pytest.mark.parametrize("keepdim", [True, False])
@pytest.mark.parametrize("reduction", ["max", "sum", "mean", "logsumexp"])
def test_conv1d_channel_reduction_fuses_and_matches(reduction, keepdim, tmp_path):
    task = reduce_task(1, REDUCTIONS[reduction], keepdim, args=", stride=2")
    program = fused(task, ieee_port(task))
    assert_one_reducing_conv(program, reduction)
    check(task, program, tmp_path)


def test_conv3d_channel_min_fuses_and_matches(tmp_path):
    task = reduce_task(3, REDUCTIONS["min"], False, args=", padding=(1, 0, 1)")
    program = fused(task, ieee_port(task))
    assert_one_reducing_conv(program, "min")
    check(task, program, tmp_path)


def refusal(task: Task) -> str:
    """Why the fused conv and the reduce kernel after it do not merge, once every epilogue that
    merges has."""
    ir = ProgramIR.from_dict(fused(task, ieee_port(task)).metadata["template_ir"])
    conv = next(k for k in ir.kernels() if k.kind in ("conv", "conv_transpose"))
    reduce = next(k for k in ir.kernels() if k.kind == "reduce")
    with pytest.raises(fuse.NotFusable) as refused:
        fuse.merged_kernel(ir, conv, reduce)
    return str(refused.value)


@pytest.mark.parametrize("args, sizes, reason", [
    (", groups=2", [{"B": 2, "C_IN": 4, "C_OUT": 6, "S": 7}], "grouped conv .groups=2."),
    (", groups=4", [{"B": 2, "C_IN": 4, "C_OUT": 4, "S": 7}], "depthwise conv .the direct form."),
])
def test_grouped_and_depthwise_convs_keep_their_channel_reduction_apart(args, sizes, reason):
    assert re.search(reason, refusal(reduce_task(2, REDUCTIONS["max"], args=args, sizes=sizes)))


def test_more_channels_than_one_tile_holds_keep_the_reduction_apart():
    task = reduce_task(2, REDUCTIONS["sum"], c_out=257)
    assert "C_out=257 is over 256" in refusal(task)


def test_a_reduction_over_another_dim_than_the_channels_stays_a_kernel_of_its_own(tmp_path):
    task = reduce_task(2, "torch.amax(x, dim=2, keepdim={keepdim})")
    assert "exactly its output channels (dim 1), not dims [2]" in refusal(task)
    program = fused(task, ieee_port(task))
    assert [k.kind for k in kernels(program)] == ["conv", "reduce"]
    check(task, program, tmp_path)


def test_more_channels_at_run_time_than_traced_widen_the_tile(tmp_path):
    """BLOCK_N follows C_out at run time: 17 channels take a tile of 32, traced at 5 (16)."""
    sizes = [ONE_SIZE[0], {"B": 1, "C_IN": 4, "C_OUT": 17, "S": 6}]
    task = reduce_task(2, REDUCTIONS["min"], args=", stride=(2, 1)", sizes=sizes)
    program = fused(task, ieee_port(task))
    assert_one_reducing_conv(program, "min")
    assert "_block_n = max(16, triton.next_power_of_2(C_out))" in program.source
    check(task, program, tmp_path)


def test_a_conv_output_read_elsewhere_is_still_written_beside_the_reduction(tmp_path):
    body = "return torch.tanh({reduction}), x * 2.0"
    task = reduce_task(1, REDUCTIONS["mean"], keepdim=False, body=body)
    (conv,) = kernels(program := fused(task, ieee_port(task)))
    assert sorted(len(o.dims) for o in conv.outputs) == [2, 3]  # (N, L) and (N, C_out, L)
    check(task, program, tmp_path)


VARIANTS = [
    {"k_loop": "taps", "channels_last": True, "BLOCK_M": 16, "BLOCK_K": 16},
    {"k_loop": "taps", "channels_last": False, "BLOCK_M": 32, "BLOCK_K": 16},
    {"k_loop": "flat", "BLOCK_M": 16, "BLOCK_K": 16},
    {"k_loop": "flat", "precision": "tf32", "tf32_round": True},
    {"k_loop": "taps", "channels_last": True, "precision": "tf32", "tf32_round": True, "BLOCK_K": 16},
    {"k_loop": "fma", "BLOCK_M": 16},
    {"k_loop": "fma", "fma_unroll": True},
    {"k_loop": "runs", "BLOCK_M": 16, "BLOCK_K": 16},
    {"k_loop": "runs", "precision": "tf32", "tf32_round": True, "BLOCK_K": 32},
]


@pytest.mark.parametrize("config", VARIANTS)
def test_every_k_loop_and_input_layout_takes_the_fused_reduction(config, tmp_path):
    task = reduce_task(2, REDUCTIONS["max"], sizes=[{"B": 2, "C_IN": 18, "C_OUT": 7, "S": 6}])
    ir = ProgramIR.from_dict(fused(task, ieee_port(task)).metadata["template_ir"])
    ir.kernels()[0].config.update(config)
    program = Program(generate(task, ir))
    assert "axis=1, keep_dims=True" in program.source
    check(task, program, tmp_path)


def test_autotuned_configs_leave_block_n_to_the_launcher_and_match(tmp_path):
    task = reduce_task(2, REDUCTIONS["logsumexp"], keepdim=False, c_out=200)
    program = fused(task, ieee_port(task))
    (conv,) = kernels(program)
    assert conv.config["BLOCK_N"] == 256 and conv.config["BLOCK_M"] <= 64
    program = coder.apply(task, program, Strategy.parse("autotune"))
    configs = conv_emit.tuning_space(kernels(program)[0])
    assert len(configs) >= 2 and all("BLOCK_N" not in c and c["BLOCK_M"] <= 64 for c in configs)
    assert "BLOCK_N=_block_n" in program.source
    check(task, program, tmp_path)


def test_tile_steps_keep_every_channel_in_one_tile():
    task = reduce_task(2, REDUCTIONS["sum"])
    program = fused(task, ieee_port(task))
    block_n = kernels(program)[0].config["BLOCK_N"]
    tiles = [s for s in coder.legal_strategies(task, program) if s.kind == "tile"]
    assert tiles and all(dict(s.params)["BLOCK_N"] == block_n for s in tiles)
    wider = {**dict(tiles[0].params), "BLOCK_N": 2 * block_n}
    with pytest.raises(CoderError, match="the launcher sets BLOCK_N"):
        coder.apply(task, program, Strategy.make("tile", **wider))


def test_library_step_hands_the_channel_reduction_to_a_reduce_kernel(tmp_path):
    task = reduce_task(2, REDUCTIONS["amin"], keepdim=False)
    task = Task(name=task.name, source=task.source.replace('MTMC = {"cpu_sizes"',
                                                           'MTMC = {"library": ["conv2d"], "cpu_sizes"'))
    program = fused(task, ieee_port(task))
    vendor = coder.apply(task, program, Strategy.parse("library conv2d"))
    assert [k.kind for k in kernels(vendor)] == ["reduce"]
    check(task, vendor, tmp_path)


@pytest.mark.parametrize("nd, reduction, keepdim, config", [
    (2, "min", True, {}),
    (2, "logsumexp", False, {"phases": False}),
    (1, "mean", False, {"channels_last": False, "tf32_round": False}),
    (3, "max", True, {}),
])
def test_conv_transpose_channel_reduction_fuses_and_matches(nd, reduction, keepdim, config, tmp_path):
    task = reduce_task(nd, REDUCTIONS[reduction], keepdim, args=", stride=2, padding=1",
                       module="ConvTranspose")
    program = fused(task, ieee_port(task))
    assert_one_reducing_conv(program, reduction, kind="conv_transpose")
    ir = ProgramIR.from_dict(program.metadata["template_ir"])
    ir.kernels()[0].config.update(config)
    check(task, Program(generate(task, ir)), tmp_path)


def test_a_grouped_conv_transpose_keeps_its_channel_reduction_apart():
    task = reduce_task(2, REDUCTIONS["sum"], args=", groups=2", module="ConvTranspose",
                       sizes=[{"B": 2, "C_IN": 4, "C_OUT": 6, "S": 5}])
    assert "grouped conv (groups=2)" in refusal(task)


def test_a_softmax_over_the_channels_fuses_with_its_full_size_output(tmp_path):
    task = reduce_task(2, "torch.softmax(x, dim=1)", body="return torch.tanh({reduction})", c_out=7)
    (conv,) = kernels(program := fused(task, ieee_port(task)))
    assert "max" in conv.op_names() and [o.dims for o in conv.outputs] == [[0, 1, 2, 3]]
    check(task, program, tmp_path)


def test_the_widened_tile_keeps_its_pipelined_buffers_within_shared_memory():
    task = reduce_task(2, REDUCTIONS["max"], c_out=256)
    ir = ProgramIR.from_dict(ieee_port(task).metadata["template_ir"])
    conv = next(k for k in ir.kernels() if k.kind == "conv")
    conv.config.update(BLOCK_K=64, num_stages=4)
    reduce = next(k for k in ir.kernels() if k.kind == "reduce")
    pointwise = next(k for k in ir.kernels() if k.kind == "pointwise")
    ir = fuse.merge(ir, conv, pointwise)
    merged, _ = fuse.merged_kernel(ir, ir.kernels()[0], reduce)
    cfg = merged.config
    assert (cfg["BLOCK_M"], cfg["BLOCK_N"]) == (64, 256)
    assert cfg["num_stages"] * (64 + 256) * 64 * 4 <= steps.SMEM_BYTES < 4 * (64 + 256) * 64 * 4
