"""Handlers of the ops that walk a dim: scans, arg-reductions, flips (coders/template/scans.py) and
concatenations (a cat of leading zeros and a shifted cumsum is an exclusive scan)."""

from __future__ import annotations

from typing import Any

import torch

from coders.template.trace.graph import Ref, unsupported
from coders.template.trace.interface import Builder


def walk(nz: Builder, name: str, op: str, b: dict, result: Any) -> Ref:
    """Scans, arg-reductions and the flips and zeros KernelBench writes around scans (the cat of
    an exclusive scan: cat)."""
    from coders.template import scans  # imported late: it imports this package

    handlers = {"cumsum": scans.trace_scan, "cumprod": scans.trace_scan, "flip": scans.trace_flip,
                "zeros_like": scans.trace_zeros_like,
                "argmax": scans.trace_argreduce, "argmin": scans.trace_argreduce}
    return handlers[op](nz, name, op, b, result)


def cat(nz: Builder, name: str, op: str, b: dict, result: Any) -> Ref:
    from coders.template import scans  # imported late: it imports this package

    if (scan := scans.trace_exclusive_scan(nz, name, b, result)) is not None:
        return scan  # KernelBench's exclusive cumsum: cat of leading zeros and a shifted cumsum
    parts = list(b["tensors"])
    if not parts or not all(nz.is_tensor(p) for p in parts) or isinstance(b.get("dim", 0), Ref):
        raise unsupported("cat of a computed list or along a computed dim")
    rank = len(nz.shape(parts[0]))
    if any(len(nz.shape(p)) != rank for p in parts):
        raise unsupported("cat of tensors of different ranks")
    return nz.add(name, "cat", "cat", parts, {"dim": b.get("dim", 0) % rank}, like=result)


def stack(nz: Builder, name: str, op: str, b: dict, result: Any) -> Ref:
    """torch.stack: a cat of the tensors, each viewed with a unit dim at `dim`."""
    parts = list(b["tensors"])
    if not parts or not all(nz.is_tensor(p) for p in parts) or not isinstance(b.get("dim", 0), int):
        raise unsupported("stack of a computed list or along a computed dim")
    dim = b.get("dim", 0) % (len(nz.shape(parts[0])) + 1)
    views = []
    for i, part in enumerate(parts):
        shape = list(nz.shape(part))
        shape.insert(dim, 1)
        like = torch.empty(shape, dtype=nz.meta(part).dtype, device="meta")
        views.append(nz.py(f"{name}_part{i}", f"{part.name}.unsqueeze({dim})", like, alias_of=part.name,
                           args=[part]))
    return cat(nz, name, "cat", {"tensors": views, "dim": dim}, result)
