"""Convolutions (conv1d / conv2d / conv3d forward) from graph node to a "conv" kernel.

The graph keeps a conv as one node: args [input, weight, bias or None], attrs as the call gave
them (stride, padding, dilation, groups). Here they become the kernel's space:

    {"input", "weight", "op": "conv2d", "form": "gemm" | "direct", "stride": [..],
     "padding": [..] | "same", "dilation": [..], "traced": output shape, "dtype": input dtype}

Sizes (batch, channels, spatial extents, kernel extents, groups = C_in // weight.shape[1]) are
read from the tensors at run time; stride, padding and dilation are the traced call's (a task
whose sizes change them is not supported). "same" padding is computed at run time from the
kernel extent, as PyTorch does (the extra element of an odd total goes after the input).

Two forms (the traced shapes choose, both are correct at every size):
  gemm    implicit GEMM per group: output pixels x output channels tiles, K = C_in/groups x the
          kernel volume, the im2col gather done by address arithmetic in the K loop. Its K loop
          walks kernel taps outside and channel blocks inside ("k_loop": "taps") where a group
          has at least 16 input channels (a dot's smallest K block) and the kernel more than one
          tap, else the flat K index
          ("flat": a 3-channel input layer would pad each tap's block of 16 with 13 zeros). The
          taps loop reads a channels-last copy of the input ("channels_last"), so that a tile
          row's channel block is one contiguous vector load. Groups of at most 8 input and fewer
          than 64 output channels take FMA outer products instead of dots ("fma", emit/conv_fma.py);
          an fp32 conv with at most 8 input and at least 64 output channels, or 8 input and at least
          16 (one group), takes dots over contiguous runs of a window row's taps x channels ("runs",
          emit/conv_runs.py).
  direct  every output channel reads one input channel (depthwise: C_in/groups == 1). A dot tile
          needs K >= 16 and N >= 16 per group; here K is the kernel volume (9 for 3x3) and N the
          channel multiplier (usually 1), so a GEMM tile would be >= 15/16 padding and one group
          per program. The direct form's tile spans channels of all groups and does only useful
          FMAs (on an H100, KernelBench 82_conv_depthwise_2D ran 1.6-1.8x of eager cuDNN).
The bias is the first op of the epilogue (acc + bias[channel]); `fuse epilogue` adds more.

Precision follows eager PyTorch on the same GPU: cuDNN runs fp32 convolutions on TF32 tensor
cores by default (torch.backends.cudnn.allow_tf32 is True), so fp32 gemm convs start with "tf32"
dots (steps.tf32_allowed); the `precision` step moves them to "tf32x3" (three TF32 products, about
fp32 accuracy) or "ieee" (fp32 FMAs). 16-bit inputs multiply on the tensor cores and accumulate in
fp32. The direct form always multiplies and accumulates in fp32 (no dot, so no precision step).
Where cuDNN computes a conv in fp32 after all (some small-channel shapes), the verifier refuses the TF32
program (tf32_beyond_eager) and the coder's retry takes exact_fp32.py's fp32-exact form.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

import torch

from coders.template.emit import conv_fma, conv_runs
from coders.template.emit.channel_reduce import reduces_channels, varies_by_channel
from coders.template.emit.common import pow2_at_least_16
from coders.template.ir import Kernel, Op, Operand, Output, ProgramIR, PyStep
from coders.template.lower.configs import COLUMN_CONFIG, COLUMN_FULL_CONFIG
from coders.template.trace import GNode, Graph, Ref, unsupported

CONV_OPS = ("conv1d", "conv2d", "conv3d")
# Port defaults; the planner tunes from here. BLOCK_N follows the output channels per group.
CONV_CONFIG = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "num_stages": 2,
               "precision": "ieee"}
CONV_CONFIG_16 = {**CONV_CONFIG, "BLOCK_M": 128, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3}
# The taps loop on a channels-last input: 256 x 64 tiles, 8 warps and 4 stages were the fastest of
# the probe's fp32 (TF32) tiles on an H100 for KernelBench level-1 2d/1d convs and level-2 conv +
# epilogue tasks (benchmarks/probes/2026-11-26-conv, 2026-11-26: 0.61-0.79x of cuDNN with TF32 on
# 55, 56, 62, 63, 67, 76, 80, where 64 x 64 tiles on NC* ran 0.21-0.45x).
TAPS_CONFIG = {**CONV_CONFIG, "BLOCK_M": 256, "num_warps": 8, "num_stages": 4, "channels_last": True}
TAPS_CONFIG_16 = {**CONV_CONFIG_16, "channels_last": True}
# With K-major weight tiles (emit/conv.py), 128 x 128 tiles, 8 warps, 3 stages led where a group has
# at least 128 output channels (KernelBench 55, 56, 67 and level-2 1_Conv2D on an H100: 1.6-2.0x
# the 256 x 64 tiles of before); with 64 output channels 256 x 64 stayed best
# (benchmarks/probes/2026-11-26-conv-tma).
TAPS_CONFIG_WIDE = {**TAPS_CONFIG, "BLOCK_M": 128, "BLOCK_N": 128, "num_stages": 3}
DIRECT_CONFIG = {"BLOCK_M": 64, "BLOCK_N": 32, "num_warps": 4, "num_stages": 2}
HALF = (torch.float16, torch.bfloat16)


def per_dim(value: Any, nd: int, what: str) -> list[int]:
    """An int or a tuple of nd ints as a list of nd ints."""
    values = list(value) if isinstance(value, list | tuple) else [value] * nd
    if len(values) == 1:
        values = values * nd
    if len(values) != nd or not all(isinstance(v, int) for v in values):
        raise unsupported(f"conv {what}={value!r} for {nd} spatial dims")
    return values


def padding_of(value: Any, nd: int) -> list[int] | str:
    if value == "valid":
        return [0] * nd
    if value == "same":
        return "same"
    if isinstance(value, str):
        raise unsupported(f"conv padding={value!r}")
    return per_dim(value, nd, "padding")


def lower_conv(graph: Graph, ir: ProgramIR, node: GNode) -> Kernel:
    x, w, bias = node.args
    x_node, w_node = graph.node(x.name), graph.node(w.name)
    nd = int(node.op[-2])
    if len(x_node.shape) != nd + 2:
        raise unsupported(f"{node.op} of an unbatched input (rank {len(x_node.shape)})")
    a = node.attrs
    stride, dilation = per_dim(a["stride"], nd, "stride"), per_dim(a["dilation"], nd, "dilation")
    padding = padding_of(a["padding"], nd)
    if padding == "same" and stride != [1] * nd:
        raise unsupported(f"{node.op} with padding='same' and stride {stride}")
    per_group_in = w_node.shape[1]
    form = "direct" if per_group_in == 1 and a["groups"] > 1 else "gemm"
    body = [Op("acc", "acc")]
    operands: list[Operand] = []
    if isinstance(bias, Ref):
        operands.append(Operand(bias.name, [1]))
        body += [Op(f"{bias.name}_v", "load", [0]), Op("biased", "add", ["acc", f"{bias.name}_v"])]
    out_shape = list(node.shape)
    dtype = x_node.dtype
    output = Output(node.name, body[-1].out, list(range(len(out_shape))),
                    f"like:{x.name}" if dtype == node.dtype else str(node.dtype).removeprefix("torch."))
    space = {"input": x.name, "weight": w.name, "op": node.op, "form": form, "stride": stride,
             "padding": padding, "dilation": dilation, "traced": out_shape,
             "dtype": str(dtype).removeprefix("torch.")}
    config = port_config(form, dtype, out_shape[1] // a["groups"], per_group_in, _prod(w_node.shape[2:]),
                         a["groups"], dilation[-1])
    return Kernel(name=node.name, kind="conv", space=space, operands=operands, body=body,
                  outputs=[output], config=config)


def port_config(form: str, dtype: torch.dtype, out_per_group: int, in_per_group: int,
                taps: int, groups: int, last_dilation: int) -> dict[str, Any]:
    if form == "direct":
        return dict(DIRECT_CONFIG)
    if conv_runs.suits(in_per_group, out_per_group, taps, groups, last_dilation, dtype):
        # few input, many output channels: dots over runs of a window row's taps x channels
        return conv_runs.port_config(out_per_group)
    if conv_fma.suits(in_per_group, out_per_group, taps):  # few channels per group: FMA outer products
        return conv_fma.port_config(out_per_group)
    # A 1x1 conv has one tap: the channels-last copy would cost a pass over the input for a loop
    # that reuses each row address once (on an H100, 87_conv_pointwise_2D ran 13.9 ms on the copy
    # with 256 x 64 tiles, 9.6 ms flat on NC* with 64 x 64)
    if in_per_group >= 16 and taps > 1:
        config = dict(TAPS_CONFIG_16 if dtype in HALF else TAPS_CONFIG, k_loop="taps")
        # a channel block no deeper than the group's input channels, so few lanes are padding
        config["BLOCK_K"] = min(config["BLOCK_K"], pow2_at_least_16(in_per_group))
    else:
        config = dict(CONV_CONFIG_16 if dtype in HALF else CONV_CONFIG, k_loop="flat")
    if config["k_loop"] == "taps" and dtype == torch.float32 and out_per_group >= 128:
        config = {**config, **{k: TAPS_CONFIG_WIDE[k] for k in ("BLOCK_M", "BLOCK_N", "num_stages")}}
    # a tile no wider than the group's output channels (a dot needs at least 16)
    config["BLOCK_N"] = min(config["BLOCK_N"], pow2_at_least_16(out_per_group))
    if dtype == torch.float32:
        config["precision"] = "tf32"  # what eager's cuDNN convolution uses (see the docstring)
        # rounded to nearest as cuDNN does, in the channels-last copies: no cost in the kernel
        config["tf32_round"] = bool(config.get("channels_last"))
    return config


# A channels-last conv or transposed conv rounds its TF32 operands to nearest in the launcher's copies,
# at no cost in the kernel (emit/conv_pack.py). The flat loop on NC* (few channels per group, 1x1)
# would round in the kernel, at 1.35-1.45x its time (KernelBench level 1, 55 / 62 / 67 on an H100;
# a rounding copy of a 1x1 conv's input would cost a pass as large as the conv's), so it truncates,
# unless a program has this many TF32 convolutions: truncation's error, ~2.3x eager cuDNN's per conv,
# passes the TF32 tolerance on one conv but not through a deep network (on an H100, 10_ResNet101,
# 20_MobileNetV2 and 26_ShuffleNet of KernelBench level 3 were rejected at 2-3x eager's own error).
DEEP_TF32_CONVS = 8


def round_deep_tf32(ir: ProgramIR) -> ProgramIR:
    """Turn on tf32_round for every TF32 conv of a program with at least DEEP_TF32_CONVS of them."""
    convs = [k for k in ir.kernels() if k.kind in ("conv", "conv_transpose")
             and k.config.get("precision") == "tf32" and k.space.get("dtype") == "float32"]
    if len(convs) >= DEEP_TF32_CONVS:
        for kernel in convs:
            kernel.config["tf32_round"] = True
    return ir


# --------------------------------------------------------------------------------------------------
# sizes the planner's cost model needs (traced)
# --------------------------------------------------------------------------------------------------

def conv_flops(ir: ProgramIR, kernel: Kernel) -> int:
    """2 * N * C_out * out_spatial * C_in/groups * kernel volume (a pooling conv's output before the
    pool: each window position is a conv tile, emit/conv_pool.py)."""
    out = kernel.space.get("pool", {}).get("conv_traced", kernel.space["traced"])
    weight = ir.shape(kernel.space["weight"])
    return 2 * _prod(out) * _prod(weight[1:])


def conv_gemm(ir: ProgramIR, kernel: Kernel) -> tuple[int, int, int, int]:
    """(groups, M, N per group, K) of the implicit GEMM at the traced sizes."""
    out = kernel.space["traced"]
    x, weight = ir.shape(kernel.space["input"]), ir.shape(kernel.space["weight"])
    groups = x[1] // weight[1]
    return groups, out[0] * _prod(out[2:]), out[1] // groups, _prod(weight[1:])


def _prod(values: list[int]) -> int:
    out = 1
    for v in values:
        out *= v
    return out


# --------------------------------------------------------------------------------------------------
# `library conv2d`: the vendor call where the task allows it, the epilogue as an elementwise kernel
# --------------------------------------------------------------------------------------------------

def library_ops(ir: ProgramIR, allowed: tuple[str, ...]) -> list[str]:
    """Conv ops of the program's Triton conv kernels that the task lets a vendor call compute."""
    ops = [k.space["op"] for k in ir.kernels() if _swappable(k) and k.space["op"] in allowed]
    return list(dict.fromkeys(ops))


def _swappable(kernel: Kernel) -> bool:
    """A Triton conv the vendor call can replace: one that pools its output or means it over the
    pixels (fuse/pooled.py) stays."""
    return kernel.kind == "conv" and "pool" not in kernel.space and "spatial_mean" not in kernel.space


def to_library(ir: ProgramIR, op: str, epilogue_config: dict[str, Any]) -> ProgramIR:
    """A copy of `ir` with every Triton `op` conv swapped for the vendor call; what the kernel's
    epilogue computed (bias, fused ops) stays in Triton, as an elementwise kernel configured by
    `epilogue_config` (a column reduction, where the epilogue reduces over the channels)."""
    new = copy.deepcopy(ir)
    steps: list[Kernel | PyStep] = []
    for step in new.steps:
        if isinstance(step, Kernel) and _swappable(step) and step.space["op"] == op:
            steps += _library_steps(new, step, epilogue_config)
        else:
            steps.append(step)
    new.steps = steps
    return new


def _library_steps(ir: ProgramIR, kernel: Kernel, config: dict[str, Any]) -> list[Kernel | PyStep]:
    sp = kernel.space
    x, w = sp["input"], sp["weight"]
    padding = repr(sp["padding"]) if sp["padding"] == "same" else repr(tuple(sp["padding"]))
    expr = (f"torch.nn.functional.{sp['op']}({x}, {w}, None, stride={tuple(sp['stride'])!r}, "
            f"padding={padding}, dilation={tuple(sp['dilation'])!r}, groups={x}.shape[1] // {w}.shape[1])")
    plain = [op.op for op in kernel.body] == ["acc"]
    value = kernel.outputs[0].value if plain else f"{kernel.name}_vendor"
    call = PyStep(outs=[value], expr=expr, uses=[x, w], library=True)
    if plain:
        return [call]
    ir.values[value] = {"shape": list(sp["traced"]), "dtype": sp["dtype"]}
    full = list(range(len(sp["traced"])))
    body = []
    for op in kernel.body:
        if op.op == "acc":
            body.append(Op(op.out, "load", [0]))
        elif op.op == "load":
            body.append(Op(op.out, "load", [op.args[0] + 1]))
        else:
            body.append(op)
    kind, space = "pointwise", {"shape_of": [value], "traced": sp["traced"]}
    if reduces_channels(kernel):  # a reduction over the channels (fuse/channels.py): a column reduction
        kind, space = "reduce", {"input": value, "red": [1, 2], "traced": sp["traced"]}
        varies = varies_by_channel(kernel)
        config = COLUMN_FULL_CONFIG if any(varies.get(o.src) for o in kernel.outputs) else COLUMN_CONFIG
    epilogue = Kernel(name=kernel.name, kind=kind, space=space,
                      operands=[Operand(value, full)] + kernel.operands, body=body,
                      outputs=[replace(o, dtype=f"like:{value}" if o.dtype == f"like:{x}" else o.dtype)
                               for o in kernel.outputs], config=dict(config))
    return [call, epilogue]
