"""A non-overlapping max / avg pool fused into the conv kernel before it (fuse/pooled.py,
emit/conv_pool.py): the steps that take it, the program it makes and what stays refused."""

from __future__ import annotations

import re

import pytest

from coders.template import fuse, steps
from coders.template.emit import conv as conv_emit
from coders.template.emit.module import generate
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

B, C_IN, C_OUT, S = {defaults}


class Model(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.{module}{nd}d(c_in, c_out, 3{args})
        self.bias = nn.Parameter(torch.randn(c_out, {ones}))
        self.pool = nn.{pool}Pool{nd}d({pool_args})

    def forward(self, x):
        x = {before}
        {body}


def get_inputs():
    return [torch.randn(B, C_IN, {spatial})]


def get_init_inputs():
    return [C_IN, C_OUT]


MTMC = {{"cpu_sizes": {sizes}}}
'''

# odd conv outputs at S = 9 with a 3-wide kernel (1d: 9; 2d: 7 x 8; 3d: 5 x 6 x 7): the floor mode
# drops a remainder
SPATIAL = {1: "S", 2: "S, S + 1", 3: "S - 2, S - 1, S"}
ONE_SIZE = [{"B": 2, "C_IN": 3, "C_OUT": 5, "S": 9}]
BEFORE = {"tanh": "torch.tanh(self.conv(x) - 0.5)", "bias": "self.conv(x) + self.bias",
          "sub": "self.conv(x) - 0.25", "both": "torch.tanh(self.conv(x) + self.bias)"}


def pool_task(nd: int, pool: str = "Max", pool_args: str = "2", before: str = "tanh",
              body: str = "return torch.sigmoid(self.pool(x))", args: str = "", sizes=None,
              module: str = "Conv") -> Task:
    """conv -> `before` -> `pool`Pool(`pool_args`) -> sigmoid (or `body`)."""
    sizes = sizes or ONE_SIZE
    defaults = ", ".join(str(sizes[0][k]) for k in ("B", "C_IN", "C_OUT", "S"))
    source = SOURCE.format(nd=nd, module=module, args=args, ones=", ".join(["1"] * nd), pool=pool,
                           pool_args=pool_args, before=BEFORE.get(before, before), body=body,
                           spatial=SPATIAL[nd], sizes=sizes, defaults=defaults)
    return Task(name=f"conv{nd}d_pool", source=source)


def assert_one_pooling_conv(program: Program, pool: str, *ops: str) -> None:
    (conv,) = kernels(program)
    assert conv.kind == "conv" and conv.space["pool"]["op"] == pool
    assert "pool" in conv.op_names() and set(ops) <= set(conv.op_names())
    assert "for win in range(0, " in program.source


@pytest.mark.parametrize("nd, pool, pool_args, before, after", [
    (1, "Max", "2", "tanh", "sigmoid"),
    (1, "Avg", "3", "sub", "tanh"),
    (2, "Max", "2", "tanh", "mish"),
    (2, "Avg", "2", "bias", "sigmoid"),
    (2, "Max", "3", "bias", "sigmoid"),
    (3, "Max", "2", "sub", "sigmoid"),
    (3, "Avg", "2", "both", "mish"),
])
def test_conv_pool_fuses_into_one_kernel_and_matches(nd, pool, pool_args, before, after, tmp_path):
    task = pool_task(nd, pool, pool_args, before, body=f"return F.{after}(self.pool(x))"
                     if after == "mish" else f"return torch.{after}(self.pool(x))")
    port = ieee_port(task)
    assert [k.kind for k in kernels(port)] == ["conv", "pointwise", "pool", "pointwise"]
    program = fused(task, port)
    assert_one_pooling_conv(program, pool.lower(), after)
    check(task, program, tmp_path)


def test_a_grouped_conv_takes_the_pool(tmp_path):
    task = pool_task(2, "Avg", args=", groups=2", sizes=[{"B": 2, "C_IN": 4, "C_OUT": 6, "S": 9}])
    program = fused(task, ieee_port(task))
    assert_one_pooling_conv(program, "avg")
    check(task, program, tmp_path)


@pytest.mark.parametrize("first", ["prologue", "epilogue"])
def test_a_pool_that_took_its_own_prologue_or_epilogue_merges_as_a_whole(first, tmp_path):
    """The pool kernel merged with the op before it (a prologue) or after it (an epilogue) first:
    the conv takes it with those ops, before and after the pool."""
    task = pool_task(2, "Max", before="torch.tanh(self.conv(x))")
    ir = ProgramIR.from_dict(ieee_port(task).metadata["template_ir"])
    conv, before, pool, after = ir.kernels()
    if first == "prologue":
        ir = fuse.merge(ir, before, pool)
    else:
        ir = fuse.merge(fuse.merge(ir, pool, after), conv, before)
    conv, pool = (next(k for k in ir.kernels() if k.kind == kind) for kind in ("conv", "pool"))
    assert len(pool.body) == 3  # the load, the pool and the op merged into it
    ir = fuse.merge(ir, conv, pool)
    assert [k.kind for k in ir.kernels()] == ["conv"] + (["pointwise"] if first == "prologue" else [])
    assert "pool" in ir.kernels()[0].space
    check(task, Program(generate(task, ir)), tmp_path)


@pytest.mark.parametrize("call", ["F.max_pool2d(x, 2)", "F.avg_pool2d(x, kernel_size=(2, 2), stride=2)"])
def test_a_functional_pool_fuses_too(call, tmp_path):
    task = pool_task(2, body=f"return torch.sigmoid({call})")
    program = fused(task, ieee_port(task))
    assert_one_pooling_conv(program, call[2:5])
    check(task, program, tmp_path)


def test_two_sizes_and_a_pooled_residual_after_the_pool(tmp_path):
    """The pooled sizes follow the input at run time; a full-size operand after the pool is read
    at the pooled pixel."""
    sizes = ONE_SIZE + [{"B": 1, "C_IN": 2, "C_OUT": 4, "S": 6}]
    task = pool_task(2, "Avg", body="y = self.pool(x)\n        return y * torch.sigmoid(y) + y.abs()",
                     sizes=sizes)
    program = fused(task, ieee_port(task))
    assert_one_pooling_conv(program, "avg")
    check(task, program, tmp_path)


VARIANTS = [
    {"k_loop": "taps", "channels_last": True, "BLOCK_M": 16, "BLOCK_K": 16},
    {"k_loop": "taps", "channels_last": False, "BLOCK_M": 32, "BLOCK_K": 16},
    {"k_loop": "flat", "BLOCK_M": 16, "BLOCK_K": 16},
    {"k_loop": "taps", "channels_last": True, "precision": "tf32", "tf32_round": True, "BLOCK_K": 16},
    {"k_loop": "fma", "BLOCK_M": 16},
    {"k_loop": "fma", "fma_unroll": True},
    {"k_loop": "runs", "BLOCK_M": 16, "BLOCK_K": 16},
    {"k_loop": "runs", "precision": "tf32", "tf32_round": True, "BLOCK_K": 32},
]


@pytest.mark.parametrize("config", VARIANTS)
def test_every_k_loop_and_input_layout_takes_the_pool(config, tmp_path):
    task = pool_task(2, sizes=[{"B": 2, "C_IN": 18, "C_OUT": 7, "S": 6}])
    ir = ProgramIR.from_dict(fused(task, ieee_port(task)).metadata["template_ir"])
    ir.kernels()[0].config.update(config)
    program = Program(generate(task, ir))
    assert "for win in range(0, PK0 * PK1)" in program.source
    check(task, program, tmp_path)


def test_autotuned_pooling_conv_matches(tmp_path):
    task = pool_task(1, "Avg")
    program = coder.apply(task, fused(task, ieee_port(task)), Strategy.parse("autotune"))
    assert len(conv_emit.tuning_space(kernels(program)[0])) >= 2
    check(task, program, tmp_path)


def test_tile_steps_apply_to_a_pooling_conv(tmp_path):
    task = pool_task(2)
    program = fused(task, ieee_port(task))
    tiles = [s for s in coder.legal_strategies(task, program) if s.kind == "tile"]
    assert tiles
    check(task, coder.apply(task, program, tiles[0]), tmp_path)


def test_a_channel_reduction_after_the_pool_fuses_too(tmp_path):
    task = pool_task(2, body="return torch.logsumexp(self.pool(x), dim=1, keepdim=True)")
    program = fused(task, ieee_port(task))
    (conv,) = kernels(program)
    assert "pool" in conv.space and "max" in conv.op_names() and "axis=1, keep_dims=True" in program.source
    check(task, program, tmp_path)


def test_the_cost_model_counts_every_window_position():
    task = pool_task(2)
    port, program = ieee_port(task), fused(task, ieee_port(task))
    ir, port_ir = (ProgramIR.from_dict(p.metadata["template_ir"]) for p in (program, port))
    assert steps.conv_flops(ir, ir.kernels()[0]) == steps.conv_flops(port_ir, port_ir.kernels()[0])


def test_a_conv_output_read_elsewhere_keeps_the_pool_apart(tmp_path):
    task = pool_task(1, body="return torch.sigmoid(self.pool(x)), x * 2.0")
    program = fused(task, ieee_port(task))
    assert "pool" in [k.kind for k in kernels(program)]
    check(task, program, tmp_path)


def refusal(task: Task) -> str:
    """Why the conv and the pool kernel after it do not merge, once every epilogue that merges has."""
    ir = ProgramIR.from_dict(fused(task, ieee_port(task)).metadata["template_ir"])
    conv = next(k for k in ir.kernels() if k.kind in ("conv", "conv_transpose"))
    pool = next(k for k in ir.kernels() if k.kind == "pool")
    with pytest.raises(fuse.NotFusable) as refused:
        fuse.merge(ir, conv, pool)
    return str(refused.value)


@pytest.mark.parametrize("pool, pool_args, reason", [
    ("Max", "2, stride=1", r"stride \[1, 1\] is not its kernel size \[2, 2\]"),
    ("Avg", "3, stride=2", r"stride \[2, 2\] is not its kernel size \[3, 3\]"),
    ("Max", "2, padding=1", r"a padded pool \(padding=\[1, 1\]\)"),
    ("Max", "2, dilation=2", r"a dilated pool \(dilation=\[2, 2\]\)"),
    ("Max", "2, ceil_mode=True", "ceil_mode"),
    ("Avg", "2, divisor_override=3", "divisor_override"),
    ("AdaptiveMax", "(2, 3)", "adaptive_max pool is not fused"),
])
def test_overlapping_padded_or_partial_windows_keep_the_pool_apart(pool, pool_args, reason):
    assert re.search(reason, refusal(pool_task(2, pool, pool_args)))


def test_a_pool_returning_its_indices_keeps_them_apart(tmp_path):
    task = pool_task(2, pool_args="2, return_indices=True",
                     body="y, i = self.pool(x)\n        return torch.sigmoid(y), i")
    assert "a pool returning its indices" in refusal(task)
    check(task, fused(task, ieee_port(task)), tmp_path)


def test_a_full_size_operand_before_the_pool_keeps_it_apart(tmp_path):
    task = pool_task(2, before="self.conv(x) * x[:, :1, 1:-1, 1:-1]")
    assert "read at the conv's resolution before the pool" in refusal(task)
    program = fused(task, ieee_port(task))
    check(task, program, tmp_path)


def test_depthwise_and_transposed_convs_keep_the_pool_apart():
    depthwise = pool_task(2, args=", groups=4", sizes=[{"B": 2, "C_IN": 4, "C_OUT": 4, "S": 9}])
    assert "depthwise conv (the direct form)" in refusal(depthwise)
    transposed = pool_task(2, module="ConvTranspose")
    assert "transposed conv does not take a pool" in refusal(transposed)


def test_the_library_step_leaves_a_pooling_conv_in_triton():
    task = pool_task(2)
    task = Task(name=task.name, source=task.source.replace('MTMC = {"cpu_sizes"',
                                                           'MTMC = {"library": ["conv2d"], "cpu_sizes"'))
    program = fused(task, ieee_port(task))
    assert Strategy.parse("library conv2d") not in coder.legal_strategies(task, program)
