"""Handlers of batch and instance norms: elementwise with running statistics, reductions over the
batch or each sample with batch statistics."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn as nn

from coders.template.trace.graph import Ref, unsupported
from coders.template.trace.interface import Builder
from coders.template.trace.reductions import rowwise


def instance_norm(nz: Builder, name: str, op: str, b: dict, result: Any) -> Ref:
    """F.instance_norm. With use_input_stats (the default) and running statistics given it would also
    update them in place, a side effect a kernel does not reproduce: refused."""
    x, mean, var = b["input"], b.get("running_mean"), b.get("running_var")
    use_input_stats = b.get("use_input_stats", True)
    eps = b.get("eps", 1e-5)
    if not isinstance(use_input_stats, bool) or isinstance(eps, Ref):
        raise unsupported("instance_norm with a computed use_input_stats or eps")
    if use_input_stats and (mean is not None or var is not None):
        raise unsupported("instance_norm updating running statistics (use_input_stats=True)")
    if use_input_stats:
        return instance_stats_norm(nz, name, x, b.get("weight"), b.get("bias"), float(eps), result)
    if not (isinstance(mean, Ref) and isinstance(var, Ref)):
        raise unsupported("instance_norm with use_input_stats=False and no running statistics")
    return running_stats_norm(nz, name, x, mean, var, b.get("weight"), b.get("bias"), float(eps))


def batch_norm(nz: Builder, name: str, op: str, b: dict, result: Any) -> Ref:
    """F.batch_norm: batch statistics with training=True or without running statistics."""
    eps = b.get("eps", 1e-5)
    if any(isinstance(v, Ref) for v in (b.get("training"), eps)):
        raise unsupported("batch_norm with a computed training flag or eps")

    def given(key: str) -> Callable[[], Ref] | None:
        ref = b.get(key)
        return (lambda: ref) if ref is not None else None

    if b.get("training", False) or b.get("running_mean") is None or b.get("running_var") is None:
        return batch_norm_batch_stats(nz, name, b["input"], given("weight"), given("bias"), float(eps))
    return batch_norm_running_stats(nz, name, b["input"], given("running_mean"), given("running_var"),
                                     given("weight"), given("bias"), float(eps))


def per_channel(nz: Builder, name: str, get: Callable[[], Ref], rank: int) -> Ref:
    """A (C,) parameter viewed as (C, 1, ...) so it broadcasts over an (N, C, *spatial) input."""
    p = get()
    view = "(-1" + ", 1" * (rank - 2) + ")"
    meta = torch.empty(nz.shape(p)[0], *([1] * (rank - 2)), device="meta", dtype=nz.meta(p).dtype)
    return nz.py(name, f"{p.name}.view{view}", meta, alias_of=p.name, args=[p])


def batch_norm_running_stats(nz: Builder, name: str, x: Ref, mean: Callable[[], Ref],
                              var: Callable[[], Ref], weight: Callable[[], Ref] | None,
                              bias: Callable[[], Ref] | None, eps: float) -> Ref:
    rank = len(nz.shape(x))
    mean = per_channel(nz, f"{name}_running_mean", mean, rank)
    var = per_channel(nz, f"{name}_running_var", var, rank)
    y = nz.pw("sub", [x, mean], base=f"{name}_centered")
    inv = nz.pw("add", [var, eps], base=f"{name}_var_eps")
    inv = nz.pw("rsqrt", [inv], base=f"{name}_inv_std")
    return batch_norm_affine(nz, name, nz.pw("mul", [y, inv], base=f"{name}_normed"), weight, bias)


def batch_norm_batch_stats(nz: Builder, name: str, x: Ref, weight: Callable[[], Ref] | None,
                            bias: Callable[[], Ref] | None, eps: float) -> Ref:
    """Per-channel mean and biased variance over the batch and the spatial dims.

    Each (n, c) plane's mean and its variance about that mean first (two reductions over the plane,
    centred values squared: no E[x^2] - mean^2 cancellation), then per channel over the batch: the
    mean of the plane means, and the variance as the mean of (plane variance + (plane mean - channel
    mean)^2), the law of total variance for equal-sized planes. The plane statistics read only x and
    values of the plane's own (n, c), so `fuse` steps can put both reductions in one pass over x;
    the per-channel mean, broadcast over the batch, could not join a pass over the planes (a reduce
    kernel's rows are (n, c) flattened)."""
    shape = nz.shape(x)
    rank = len(shape)
    if rank < 2:
        raise unsupported("batch norm of a tensor without a channel dim")
    per_channel_shape = (1, shape[1], *[1] * (rank - 2))

    def over_batch(value: Ref, base: str) -> Ref:
        return nz.red("mean", value, (0, 1), base, per_channel_shape, attrs={"keepdim": True})

    def centred_square(value: Ref, mean: Ref, base: str) -> Ref:
        centred = nz.pw("sub", [value, mean], base=f"{base}_centered")
        return nz.pw("mul", [centred, centred], base=f"{base}_sq")

    if rank > 2:
        planes = (*shape[:2], *[1] * (rank - 2))
        plane_mean = nz.red("mean", x, (2, rank), f"{name}_mean_planes", planes, attrs={"keepdim": True})
        plane_var = nz.red("mean", centred_square(x, plane_mean, f"{name}_plane"), (2, rank),
                           f"{name}_var_planes", planes, attrs={"keepdim": True})
        mean = over_batch(plane_mean, f"{name}_mean")
        spread = nz.pw("add", [plane_var, centred_square(plane_mean, mean, f"{name}_between")],
                       base=f"{name}_within_between")
        var = over_batch(spread, f"{name}_var")
    else:
        mean = over_batch(x, f"{name}_mean")
        var = over_batch(centred_square(x, mean, name), f"{name}_var")
    inv = nz.pw("add", [var, eps], base=f"{name}_var_eps")
    inv = nz.pw("rsqrt", [inv], base=f"{name}_inv_std")
    centered = nz.pw("sub", [x, mean], base=f"{name}_centered")
    return batch_norm_affine(nz, name, nz.pw("mul", [centered, inv], base=f"{name}_normed"), weight, bias)


def batch_norm_affine(nz: Builder, name: str, y: Ref, weight: Callable[[], Ref] | None,
                       bias: Callable[[], Ref] | None) -> Ref:
    rank = len(nz.shape(y))
    if weight is not None and bias is not None:  # nn.BatchNorm: affine has both
        y = nz.pw("mul", [y, per_channel(nz, f"{name}_weight", weight, rank)], base=f"{name}_scaled")
        return nz.pw("add", [y, per_channel(nz, f"{name}_bias", bias, rank)], base=name)
    if weight is not None:
        return nz.pw("mul", [y, per_channel(nz, f"{name}_weight", weight, rank)], base=name)
    if bias is not None:
        return nz.pw("add", [y, per_channel(nz, f"{name}_bias", bias, rank)], base=name)
    return y


def affine_params(nz: Builder, module: nn.Module, path: str) -> tuple[Ref | None, Ref | None]:
    if not getattr(module, "affine", False):
        return None, None
    return nz.param(f"{path}.weight"), nz.param(f"{path}.bias")


def running_stats_norm(nz: Builder, name: str, x: Ref, mean: Ref, var: Ref, weight: Ref | None,
                        bias: Ref | None, eps: float) -> Ref:
    """(x - mean) / sqrt(var + eps) [* weight + bias] with per-channel (dim 1) statistics known
    before the call: batch norm in eval mode, instance norm reading its running statistics. It is
    elementwise, so it fuses into the producer's epilogue."""
    rank = len(nz.shape(x))
    if rank < 2:
        raise unsupported(f"{name}: a norm over channels of a {rank}-D input")
    view = "(-1" + ", 1" * (rank - 2) + ")"

    def channel(ref: Ref, what: str) -> Ref:
        meta = torch.empty(nz.shape(ref)[0], *([1] * (rank - 2)), device="meta", dtype=nz.meta(ref).dtype)
        return nz.py(f"{name}_{what}", f"{ref.name}.view{view}", meta, alias_of=ref.name, args=[ref])

    y = nz.pw("sub", [x, channel(mean, "running_mean")], base=f"{name}_centered")
    inv = nz.pw("add", [channel(var, "running_var"), eps], base=f"{name}_var_eps")
    inv = nz.pw("rsqrt", [inv], base=f"{name}_inv_std")
    y = nz.pw("mul", [y, inv], base=f"{name}_normed" if weight is not None or bias is not None else name)
    if weight is not None:
        y = nz.pw("mul", [y, channel(weight, "weight")], base=f"{name}_scaled" if bias is not None else name)
    if bias is not None:
        y = nz.pw("add", [y, channel(bias, "bias")], base=name)
    return y


def instance_stats_norm(nz: Builder, name: str, x: Ref, weight: Ref | None, bias: Ref | None,
                         eps: float, result: Any) -> Ref:
    """Instance norm with each sample's per-channel statistics: a GroupNorm whose group count is the
    input's channel count, read at run time (an InstanceNorm's num_features need not match it when
    it has no affine weights: KernelBench level 2's 28_BMM_InstanceNorm normalizes a (B, 1, 1, F)
    tensor with num_features=F)."""
    if len(nz.shape(x)) < 3:
        raise unsupported(f"{name}: instance norm of a {len(nz.shape(x))}-D input (no spatial dims)")
    channels = nz.py(f"{name}_channels", f"{x.name}.shape[1]", None, args=[x])
    b = {"input": x, "num_groups": channels, "weight": weight, "bias": bias, "eps": eps}
    return rowwise(nz, name, "group_norm", b, result)
