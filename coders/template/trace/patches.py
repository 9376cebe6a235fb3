"""Tensor.unfold(dim, size, step), the sliding windows ViT cuts its patches with, as a strided view.

Each window is a new last dim of `size` elements `stride(dim)` apart, and `dim` itself counts the
windows, `step` elements apart: no data moves, so the program builds the view with `as_strided`
from the tensor's own shape and strides at run time (aten's `unfold` is not glue; `as_strided` is).
A later reshape of the view copies, as it does in the reference.
"""

from __future__ import annotations

from typing import Any

from coders.template.trace.graph import Ref, unsupported
from coders.template.trace.render import render

PARAMS = ["input", "dimension", "size", "step"]


def trace_unfold(nz, name: str, op: str, b: dict, result: Any) -> Ref:
    bound = dict(zip(PARAMS, b["args"], strict=False)) | dict(b["kwargs"])
    x, dim, size, step = (bound.get(k) for k in PARAMS)
    if not nz.is_tensor(x) or not isinstance(dim, int) or isinstance(dim, bool):
        raise unsupported("Tensor.unfold of a non-tensor or along a computed dim")
    dim %= max(1, len(nz.shape(x)))
    v, size, step = x.name, render(size), render(step)
    shape = f"(*{v}.shape[:{dim}], ({v}.shape[{dim}] - {size}) // {step} + 1, *{v}.shape[{dim + 1}:], {size})"
    strides = (f"(*{v}.stride()[:{dim}], {v}.stride({dim}) * {step}, *{v}.stride()[{dim + 1}:], "
               f"{v}.stride({dim}))")
    refs = [a for a in (x, bound.get("size"), bound.get("step")) if isinstance(a, Ref)]
    return nz.py(name, f"{v}.as_strided({shape}, {strides}, {v}.storage_offset())", result, args=refs)
