"""A non-overlapping max or average pool merged into the conv kernel before it.

`x = pool(f(conv(x)))` (KernelBench level 2: conv -> elementwise ops -> MaxPool / AvgPool with
stride == kernel_size) is a conv kernel that writes the whole conv output and a pool kernel that
reads it back. When the pool's windows tile the conv output (stride == kernel_size, no padding,
dilation 1, floor mode) the conv kernel's rows become pooled pixels: each program computes the conv
tile at every position of its pixels' windows, applies the epilogue ops before the pool to it and
keeps a running max or sum (emit/conv_pool.py). Only the pooled output is written. The merged
kernel stays a conv; its space's "traced" becomes the pooled shape, so elementwise ops after the
pool (and a reduction over the channels, fuse/channels.py) merge onto it as onto any conv output.

A global average pool, `adaptive_avg_pool2d(x, 1)` or `x.mean([2, 3])` (a reduce kernel over every
spatial dim), merges too, on the conv's own rows: the tile's rows are summed per image and added
atomically into a zeroed [N, C_out] output (emit/conv_mean.py, space "spatial_mean"). Nothing merges
after it: a later op reads the means from the output.
"""

from __future__ import annotations

from coders.template.emit import channel_reduce, conv_mean
from coders.template.fuse.queries import NotFusable, space_shape
from coders.template.ir import Kernel, ProgramIR


def takes_pool(host: Kernel, guest: Kernel, prologue: bool) -> bool:
    """A pool kernel reading a conv's (or transposed conv's) output: fuse/merge.py lets pool_space
    judge and place it."""
    return guest.kind == "pool" and not prologue and host.kind in ("conv", "conv_transpose")


def refuse_pool(ir: ProgramIR, host: Kernel, guest: Kernel) -> None:
    """Raise NotFusable, with the reason, unless `guest` pools every spatial dim of the conv's output
    in non-overlapping windows that the conv kernel can walk."""
    if host.kind != "conv":
        raise NotFusable("a transposed conv does not take a pool: its programs walk output phases, "
                         "not the pool's windows")
    if host.space.get("form", "gemm") != "gemm":
        raise NotFusable("a depthwise conv (the direct form) is not fused with a pool")
    if "pool" in host.space:
        raise NotFusable("the conv kernel already pools its output")
    if channel_reduce.reduces_channels(host):
        raise NotFusable("a pool after a reduction over the channels is not fused")
    kind, fixed = guest.space["pool"], guest.space.get("fixed")
    if kind not in ("max", "avg"):
        raise NotFusable(f"an {kind} pool is not fused with a conv: its windows follow the output size")
    if any(op.op == "pool_index" for op in guest.body):
        raise NotFusable("a pool returning its indices is not fused with a conv")
    rank = len(space_shape(ir, host))
    if guest.space["nd"] != rank - 2 or guest.space["in_traced"] != space_shape(ir, host):
        raise NotFusable("the pool does not pool every spatial dim of the conv's output")
    if not fixed:
        raise NotFusable("the pool's traced parameters are unknown (the reference computes them): its "
                         "windows may overlap")
    if fixed["stride"] != fixed["kernel_size"]:
        raise NotFusable(f"the pool's stride {fixed['stride']} is not its kernel size "
                         f"{fixed['kernel_size']}: its windows overlap or leave gaps")
    if any(fixed["padding"]):
        raise NotFusable(f"a padded pool (padding={fixed['padding']}) is not fused with a conv")
    if any(d != 1 for d in fixed.get("dilation", [1])):
        raise NotFusable(f"a dilated pool (dilation={fixed['dilation']}) is not fused with a conv")
    if fixed["ceil_mode"]:
        raise NotFusable("a pool with ceil_mode is not fused with a conv: its last windows are partial")
    if fixed.get("divisor_override") is not None:
        raise NotFusable("an average pool with a divisor_override is not fused with a conv")


def pool_space(merged: Kernel, guest: Kernel) -> None:
    """The merged kernel's space: it pools (what, over which window, the parameters it reads at run
    time) and iterates over the pooled output."""
    sp = merged.space
    sp["pool"] = {"op": guest.space["pool"], "kernel": list(guest.space["fixed"]["kernel_size"]),
                  "conv_traced": list(sp["traced"])}
    sp["params"] = guest.space["params"]
    sp["traced"] = list(guest.space["traced"])


def takes_mean(host: Kernel, guest: Kernel, prologue: bool) -> bool:
    """A reduction over every spatial dim of a conv's output (adaptive_avg_pool(x, 1) or a mean over
    [2, 3] lower to one): fuse/merge.py lets refuse_mean judge it and marks the merged kernel's space
    "spatial_mean"."""
    return not prologue and host.kind in ("conv", "conv_transpose") and guest.kind == "reduce" and \
        guest.space["red"] == [2, len(guest.space["traced"])]


def refuse_mean(ir: ProgramIR, host: Kernel, guest: Kernel) -> None:
    """Raise NotFusable, with the reason, unless `guest` means (or sums) the whole conv output over
    its pixels, one value per (image, channel), and the conv's tile can add its rows into it
    (emit/conv_mean.py)."""
    if host.space.get("form", "gemm") != "gemm":
        raise NotFusable("a depthwise conv (the direct form) is not fused with a mean over its pixels")
    if "pool" in host.space or channel_reduce.reduces_channels(host):
        raise NotFusable("the conv kernel already pools or reduces its output")
    if host.space.get("dtype") != "float32":
        raise NotFusable("a mean over the pixels is fused into an fp32 conv only (it adds fp32 atomics)")
    if space_shape(ir, guest) != space_shape(ir, host) or guest.space.get("groups"):
        raise NotFusable("the reduction reads a tensor of another shape than the conv's output")
    reduction = conv_mean.final_mean(guest.body)
    if reduction is None:
        raise NotFusable("a conv's epilogue takes one mean or sum over its pixels, last")
    if any(op.op == "ridx" for op in guest.body):
        raise NotFusable("the reduction reads its element's index")
    if [(o.src, o.dims) for o in guest.outputs] != [(reduction.out, [0, 1])]:
        raise NotFusable("the reduction writes other values than one per (image, channel)")
