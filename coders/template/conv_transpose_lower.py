"""Transposed convolutions (ConvTranspose1d/2d/3d, F.conv_transpose1d/2d/3d): tracing and lowering.

A traced transposed conv becomes one graph node of kind "conv_transpose" with args
`[input, weight, bias or None, geometry]`. `geometry` is a Python value holding
`(stride, padding, output_padding, dilation, groups)` as tuples of one int per spatial dim (and the
group count): for a module it is read from the module at run time (`self.conv.stride`, ...), since a
task's sizes may change them; for a functional call it is the call's constants. Kernel sizes and
channel counts are read from the tensors at run time, so the traced shapes only decide structure
(the rank, the default tiles).

The node lowers to a kernel of kind "conv_transpose" whose space is the output (N, C_out, *spatial):
    {"input": x, "weight": w, "geometry": g, "dims": D, "traced": out shape, "dtype": x's dtype}
and whose body is the epilogue on the fp32 accumulator ("acc"), starting with the bias add, so the
`fuse epilogue` step appends elementwise consumers to it as it does for matmuls.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn as nn

from coders.template.emit import conv_fma
from coders.template.emit.common import pow2_at_least_16
from coders.template.ir import Kernel, Output, ProgramIR, self_path
from coders.template.trace import Ref, unsupported

# Port defaults; the planner tunes from here. BLOCK_N and BLOCK_K shrink to the traced channel counts
# per group (tl.dot needs at least 16).
# phases: the stride-phase form, which skips the taps a stride leaves dead (emit/conv_transpose.py);
# live_taps: its K loop walks the phase's live taps x channel blocks as one pipelined loop
# (emit/conv_transpose_loop.py). With it, 128 x 64 x 32 tiles, 4 warps, 3 stages led an H100 probe of
# 10 level-2 and 7 level-1 KernelBench transposed convs (benchmarks/probes/2026-11-26-conv/
# h100-transpose-live-l1/l2.json): geomean over eager 2.08x (level 2) / 1.44x (level 1) against
# 1.93x / 1.32x for the 64 x 64 x 32, 2-stage tiles of before, and 1.49x / 1.22x for the `if` loop
# (live_taps False) that did not pipeline.
# grouped_programs: one program axis, channel block fastest, then (group, phase), then pixel block, so
# a pixel block's phases and channel blocks run together (their output sectors and input rows meet in
# L2). H100 probe, 7 level-2 tasks (h100-transpose-grouped.json): geomean over eager 2.40x against
# 1.98x; 44 1.17 -> 0.80 ms, 93 2.83 -> 2.14, 5 4.97 -> 3.58, 3 3.23 -> 2.65, 38 3.95 -> 3.38; 34 and
# 11 unchanged. Storing the tile transposed (`epilogue_t`) was 2.7x slower there; it stays a variant.
# transpose_static (group channels and geometry as constexprs) at 4 stages: H100 probe on 7 level-2
# tasks, geomean over TF32 eager 2.13x -> 2.42x, each of the 7 faster (93 2.15 -> 1.60 ms, 5 3.58 ->
# 2.96, 42 5.50 -> 5.02, 44 0.80 -> 0.72; 3 stages 2.34x, BLOCK_K 64 2.16x). 16-bit tiles: unprobed.
CONV_TRANSPOSE_CONFIG = {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "num_stages": 4,
                         "precision": "ieee", "phases": True, "live_taps": True, "grouped_programs": True,
                         "transpose_static": True}
CONV_TRANSPOSE_CONFIG_16 = {**CONV_TRANSPOSE_CONFIG, "BLOCK_M": 128, "BLOCK_K": 64, "num_warps": 8,
                            "num_stages": 2, "transpose_static": False}
# BLOCK_M x BLOCK_N of a tile narrower than 64 output channels: the tiles' areas before the probe
NARROW_AREA = {"float32": 64 * 64, "float16": 128 * 64, "bfloat16": 128 * 64}
MODULES = {nn.ConvTranspose1d: 1, nn.ConvTranspose2d: 2, nn.ConvTranspose3d: 3}
OPS = {"conv_transpose1d": 1, "conv_transpose2d": 2, "conv_transpose3d": 3}
PARAMS = ["input", "weight", "bias", "stride", "padding", "output_padding", "groups", "dilation"]


# --------------------------------------------------------------------------------------------------
# tracing (called from the handler tables of coders/template/trace/)
# --------------------------------------------------------------------------------------------------

def trace_module(nz, n, module: nn.Module, path: str, args: list, kwargs: dict, result: Any) -> Ref:
    """nn.ConvTranspose{1,2,3}d: the geometry is read from the module when the program runs."""
    kind = type(module).__name__
    if len(args) > 1 or kwargs.get("output_size") is not None:
        raise unsupported(f"{kind} with output_size= in forward (give the module output_padding instead)")
    if module.padding_mode != "zeros":
        raise unsupported(f"{kind} with padding_mode={module.padding_mode!r}")
    weight = nz.param(f"{path}.weight")
    bias = nz.param(f"{path}.bias") if module.bias is not None else None
    m = self_path(path)
    geometry = nz.py(f"{n.name}_geometry",
                     f"({m}.stride, {m}.padding, {m}.output_padding, {m}.dilation, {m}.groups)", None)
    return _node(nz, n.name, args[0], weight, bias, geometry, MODULES[type(module)], result)


def trace_function(nz, name: str, op: str, b: dict, result: Any) -> Ref:
    """F.conv_transpose{1,2,3}d / torch.conv_transpose{1,2,3}d with constant geometry."""
    dims = OPS[op]
    geometry = []
    for key, default in (("stride", 1), ("padding", 0), ("output_padding", 0), ("dilation", 1)):
        geometry.append(_ntuple(b.get(key, default), dims, f"{op} {key}"))
    groups = b.get("groups", 1)
    if not isinstance(groups, int):
        raise unsupported(f"{op} with a computed group count")
    text = repr((*geometry, groups))
    ref = nz.py(f"{name}_geometry", text, None)
    return _node(nz, name, b["input"], b["weight"], b.get("bias"), ref, dims, result)


def _ntuple(value: Any, dims: int, what: str) -> tuple[int, ...]:
    if isinstance(value, int) and not isinstance(value, bool):
        return (value,) * dims
    if isinstance(value, list | tuple) and len(value) == dims and all(isinstance(v, int) for v in value):
        return tuple(value)
    if isinstance(value, list | tuple) and len(value) == 1 and isinstance(value[0], int):
        return (value[0],) * dims
    raise unsupported(f"{what}={value!r} (a constant int or {dims} ints)")


def _node(nz, name: str, x: Any, weight: Any, bias: Any, geometry: Ref, dims: int, result: Any) -> Ref:
    if not (nz.is_tensor(x) and nz.is_tensor(weight)):
        raise unsupported("a transposed convolution of non-tensors")
    if len(nz.shape(x)) != dims + 2:
        raise unsupported(f"conv_transpose{dims}d without a batch dim (input {list(nz.shape(x))})")
    if bias is not None and not nz.is_tensor(bias):
        raise unsupported("a transposed convolution with a non-tensor bias")
    if not isinstance(result, torch.Tensor):
        raise unsupported("a transposed convolution that does not return a tensor")
    return nz.add(name, "conv_transpose", f"conv_transpose{dims}d", [x, weight, bias, geometry],
                  {"dims": dims}, like=result)


# --------------------------------------------------------------------------------------------------
# lowering (called from coders/template/lower/)
# --------------------------------------------------------------------------------------------------

def lower_conv_transpose(graph, ir: ProgramIR, node, body) -> Kernel:
    """One implicit-GEMM kernel; `body` (lower.Body, empty) becomes its epilogue: acc (+ bias per
    output channel)."""
    x, w, bias, geometry = node.args
    out_shape = list(node.shape)
    body.space_shape = out_shape
    out = body.op("acc", [], base="acc")
    if isinstance(bias, Ref):
        out = body.op("add", [out, body.load(bias.name, [1])], base="biased")
    dtype = str(graph.node(x.name).dtype).removeprefix("torch.")
    out_dtype = str(node.dtype).removeprefix("torch.")
    output = Output(node.name, out, list(range(len(out_shape))),
                    f"like:{x.name}" if out_dtype == dtype else out_dtype)
    space = {"input": x.name, "weight": w.name, "geometry": geometry.name, "dims": node.attrs["dims"],
             "traced": out_shape, "dtype": dtype}
    config = dict(CONV_TRANSPOSE_CONFIG_16 if dtype in ("float16", "bfloat16") else CONV_TRANSPOSE_CONFIG)
    w_shape = graph.node(w.name).shape
    groups = max(1, out_shape[1] // max(1, w_shape[1]))
    config["BLOCK_N"] = min(config["BLOCK_N"], pow2_at_least_16(w_shape[1]))
    config["BLOCK_K"] = min(config["BLOCK_K"], pow2_at_least_16(w_shape[0] // groups))
    if config["BLOCK_N"] < CONV_TRANSPOSE_CONFIG["BLOCK_N"]:
        # few output channels per group: more pixels per program, keeping the area of the port's tile
        # before the probe (a guess, not measured; the tile and autotune steps choose from here)
        config["BLOCK_M"] = min(256, max(64, NARROW_AREA.get(dtype, 64 * 64) // config["BLOCK_N"]))
    if conv_fma.suits(w_shape[0] // groups, w_shape[1], _prod(w_shape[2:])):
        # few input channels per group: FMA outer products in fp32, read from NC* (emit/conv_fma.py)
        config.update(conv_fma.port_config(w_shape[1]))
        config["transpose_static"] = False  # the probe timed the dot loops only
    elif dtype == "float32":
        config["precision"] = "tf32"  # eager's cuDNN runs fp32 transposed convs on TF32 too (emit docstring)
        # read from a channels-last copy that rounds to TF32 as cuDNN does (emit/conv_pack.py), as the
        # forward conv's taps loop does; not yet timed on a GPU for transposed convs
        config["channels_last"] = config["tf32_round"] = True
    return Kernel(name=node.name, kind="conv_transpose", space=space, operands=body.operands,
                  body=body.ops, outputs=[output], config=config)


# --------------------------------------------------------------------------------------------------
# sizes at the traced shapes (the planner's cost model)
# --------------------------------------------------------------------------------------------------

def flops(ir: ProgramIR, kernel: Kernel) -> int:
    """2 * N * C_in * in_spatial * C_out/groups * kernel volume: every input pixel meets every tap
    of the C_out/groups output channels its group feeds."""
    x, w = ir.shape(kernel.space["input"]), ir.shape(kernel.space["weight"])
    return 2 * _prod(x) * _prod(w[1:])


def programs(ir: ProgramIR, kernel: Kernel) -> int:
    out, w = kernel.space["traced"], ir.shape(kernel.space["weight"])
    cfg = kernel.config
    groups = max(1, out[1] // max(1, w[1]))
    m = out[0] * _prod(out[2:])
    return -(-m // cfg["BLOCK_M"]) * -(-w[1] // cfg["BLOCK_N"]) * groups


def _prod(shape: list[int]) -> int:
    total = 1
    for s in shape:
        total *= s
    return total
