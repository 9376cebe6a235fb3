"""Distances and the triplet margin loss (nn.PairwiseDistance, nn.TripletMarginLoss and their F.*
forms), traced into elementwise and reduction nodes.

    pairwise_distance(x1, x2)  ||x1 - x2 + eps||_p over the last dim (PyTorch adds eps to the
                               difference): a p = 2 norm reduction, or sum(|d|^p)^(1/p), max |d|
    triplet_margin_loss        relu(d(a, p) - d(a, n) + margin), d(a, n) replaced by min(d(a, n),
                               d(p, n)) with swap, then the reduction

The difference is an elementwise node the `fuse prologue` step folds into its reduction.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn as nn

from coders.template.trace.graph import Ref, unsupported

DISTANCE_PARAMS = ["x1", "x2", "p", "eps", "keepdim"]
TRIPLET_PARAMS = ["anchor", "positive", "negative", "margin", "p", "eps", "swap", "size_average", "reduce",
                  "reduction"]


def trace_function(nz, name: str, op: str, b: dict, result: Any) -> Ref:
    """F.pairwise_distance / F.triplet_margin_loss, bound by their parameter names."""
    params = DISTANCE_PARAMS if op == "pairwise_distance" else TRIPLET_PARAMS
    bound = dict(zip(params, b["args"], strict=False)) | dict(b["kwargs"])
    if op == "pairwise_distance":
        return distance(nz, name, bound["x1"], bound["x2"], bound.get("p", 2.0), bound.get("eps", 1e-6),
                        bool(bound.get("keepdim", False)))
    return triplet(nz, name, bound, result)


def trace_module(nz, n, module: nn.Module, path: str, args: list, kwargs: dict, result: Any) -> Ref:
    if isinstance(module, nn.PairwiseDistance):
        return distance(nz, n.name, args[0], args[1], module.norm, module.eps, module.keepdim)
    bound = dict(zip(TRIPLET_PARAMS, args, strict=False)) | dict(kwargs)
    bound |= {"margin": module.margin, "p": module.p, "eps": module.eps, "swap": module.swap,
              "reduction": module.reduction}
    return triplet(nz, n.name, bound, result)


def distance(nz, name: str, x1: Ref, x2: Ref, p: Any, eps: Any, keepdim: bool) -> Ref:
    if not (nz.is_tensor(x1) and nz.is_tensor(x2)) or any(isinstance(v, Ref) for v in (p, eps)):
        raise unsupported("pairwise_distance of computed p or eps")
    p, eps = float(p), float(eps)
    if p <= 0:
        raise unsupported(f"pairwise_distance with p={p}")
    shape = tuple(torch.broadcast_shapes(nz.shape(x1), nz.shape(x2)))
    if not shape:
        raise unsupported("pairwise_distance of 0-d tensors")
    rank = len(shape)
    out = (*shape[:-1], 1) if keepdim else shape[:-1]
    diff = nz.pw("add", [nz.pw("sub", [x1, x2], base=f"{name}_sub"), eps], base=f"{name}_diff")
    attrs = {"keepdim": keepdim}
    if p == 2.0:
        return nz.red("norm", diff, (rank - 1, rank), name, out, attrs=attrs)
    size = nz.pw("abs", [diff], base=f"{name}_abs")
    if math.isinf(p):
        return nz.red("amax", size, (rank - 1, rank), name, out, attrs=attrs)
    if p == 1.0:
        return nz.red("sum", size, (rank - 1, rank), name, out, attrs=attrs)
    powered = nz.pw("pow", [size, p], base=f"{name}_pow")
    total = nz.red("sum", powered, (rank - 1, rank), f"{name}_sum", out, attrs=attrs)
    return nz.pw("pow", [total, 1.0 / p], base=name)


def triplet(nz, name: str, b: dict, result: Any) -> Ref:
    if b.get("size_average") is not None or b.get("reduce") is not None:
        raise unsupported("triplet_margin_loss with the deprecated size_average/reduce arguments")
    margin, p, eps = b.get("margin", 1.0), b.get("p", 2.0), b.get("eps", 1e-6)
    if isinstance(margin, Ref):
        raise unsupported("triplet_margin_loss with a computed margin")
    anchor, positive, negative = b["anchor"], b["positive"], b["negative"]
    d_pos = distance(nz, f"{name}_d_pos", anchor, positive, p, eps, False)
    d_neg = distance(nz, f"{name}_d_neg", anchor, negative, p, eps, False)
    if b.get("swap", False):
        d_swap = distance(nz, f"{name}_d_swap", positive, negative, p, eps, False)
        d_neg = nz.pw("minimum", [d_neg, d_swap], base=f"{name}_d_min")
    gap = nz.pw("sub", [d_pos, d_neg], base=f"{name}_gap")
    gap = nz.pw("add", [gap, float(margin)], base=f"{name}_margin")
    reduction = b.get("reduction", "mean")
    losses = nz.pw("relu", [gap], base=name if reduction == "none" else f"{name}_losses")
    if reduction == "none":
        return losses
    if reduction not in ("mean", "sum"):
        raise unsupported(f"triplet_margin_loss with reduction={reduction}")
    rank = len(nz.shape(losses))
    return nz.red(reduction, losses, (0, rank), name, tuple(result.shape), attrs={"keepdim": False})
