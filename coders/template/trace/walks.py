"""Handlers of the ops that walk a dim: scans, arg-reductions, flips (coders/template/scans.py) and
concatenations (a cat of leading zeros and a shifted cumsum is an exclusive scan)."""

from __future__ import annotations

from typing import Any

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
