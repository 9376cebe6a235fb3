"""Handlers of reductions and row-wise families (softmax, norms over trailing dims, losses, cosine
similarity) over contiguous dims of their first argument."""

from __future__ import annotations

from typing import Any

from coders.template.trace.graph import Ref, Uncomputable, unsupported
from coders.template.trace.interface import Builder


def _dims(nz: Builder, x: Ref, dim: Any) -> tuple[int, int]:
    """Normalize `dim` (None, int, tuple) to a contiguous range [d0, d1) of x's dims."""
    rank = len(nz.shape(x))
    if dim is None or dim == () or dim == []:
        return (0, rank)
    dims = sorted({d % rank for d in (dim if isinstance(dim, list | tuple) else [dim])}) if rank else []
    if not all(isinstance(d, int) for d in dims):
        raise unsupported("a reduction over a computed dim")
    if dims and dims != list(range(dims[0], dims[-1] + 1)):
        raise unsupported(f"a reduction over non-adjacent dims {dims}")
    return (dims[0], dims[-1] + 1) if dims else (0, 0)


def reduce(nz: Builder, name: str, op: str, b: dict, result: Any) -> Any:
    x = b["input"]
    if op in ("max", "min") and nz.is_tensor(b.get("dim")):
        # torch.max(a, b) is elementwise
        return nz.add(name, "pw", "maximum" if op == "max" else "minimum", [x, b.get("dim")],
                      like=result)
    if b.get("dtype") is not None:
        raise unsupported(f"{op} with dtype=")
    if op in ("max", "min") and b.get("dim") is not None:
        values = result[0]
        red = _dims(nz, x, b["dim"])
        keepdim = bool(b.get("keepdim", False))
        ref = nz.red("amax" if op == "max" else "amin", x, red, f"{name}_values", tuple(values.shape),
                     attrs={"keepdim": keepdim})
        if not nz.meta(x).dtype.is_floating_point:
            return (ref, Uncomputable(f"{op}(dim=...) indices of an integer tensor"))
        from coders.template import scans  # imported late: it imports this package

        arg = "argmax" if op == "max" else "argmin"
        return (ref, scans.trace_indices(nz, f"{name}_indices", arg, x, red[0], keepdim, result[1]))
    red = _dims(nz, x, b.get("dim"))
    attrs: dict[str, Any] = {"keepdim": bool(b.get("keepdim", False))}
    canonical = {"max": "amax", "min": "amin"}.get(op, op)
    if op in ("var", "std"):
        correction = b.get("correction")
        if correction is None:
            unbiased = b.get("unbiased", True)
            correction = 1 if unbiased in (True, None) else 0
        attrs["correction"] = float(correction)
    if op == "norm":
        if b.get("p", "fro") not in ("fro", 2, 2.0, None):
            raise unsupported(f"norm with p={b.get('p')}")
    return nz.red(canonical, x, red, name, tuple(result.shape), attrs=attrs)


def rowwise(nz: Builder, name: str, op: str, b: dict, result: Any) -> Ref:
    x = b["input"]
    rank = len(nz.shape(x))
    if op in ("softmax", "log_softmax"):
        if b.get("dtype") is not None:
            raise unsupported(f"{op} with dtype=")
        dim = b.get("dim")
        if dim is None:
            raise unsupported(f"{op} without dim")
        d = dim % rank
        return nz.red(op, x, (d, d + 1), name, tuple(result.shape))
    if op in ("layer_norm", "rms_norm"):
        shape = b["normalized_shape"]
        n = len(shape) if isinstance(shape, list | tuple) else 1
        eps = b.get("eps")
        if eps is None:
            eps = 1e-5 if op == "layer_norm" else None
        extra = [b.get("weight"), b.get("bias")] if op == "layer_norm" else [b.get("weight"), None]
        return nz.red(op, x, (rank - n, rank), name, tuple(result.shape), extra=extra,
                      attrs={"eps": eps})
    if op == "group_norm":
        groups = b["num_groups"]
        groups = groups.name if isinstance(groups, Ref) else int(groups)
        return nz.red(op, x, (1, rank), name, tuple(result.shape),
                      extra=[b.get("weight"), b.get("bias")],
                      attrs={"eps": float(b.get("eps", 1e-5)), "groups": groups},
                      refs=[Ref(groups)] if isinstance(groups, str) else None)
    if op == "normalize":
        if float(b.get("p", 2.0)) != 2.0:
            raise unsupported("normalize with p != 2")
        d = b.get("dim", 1) % rank
        return nz.red(op, x, (d, d + 1), name, tuple(result.shape),
                      attrs={"eps": float(b.get("eps", 1e-12))})
    raise unsupported(f"op {op}")


def cosine(nz: Builder, name: str, op: str, b: dict, result: Any) -> Ref:
    x1, x2 = b["x1"], b["x2"]
    if nz.shape(x1) != nz.shape(x2):
        raise unsupported("cosine_similarity with broadcasting")
    d = b.get("dim", 1) % len(nz.shape(x1))
    return nz.red("cosine_similarity", x1, (d, d + 1), name, tuple(result.shape), extra=[x2],
                  attrs={"eps": float(b.get("eps", 1e-8))})


def loss(nz: Builder, name: str, op: str, b: dict, result: Any) -> Ref:
    x, t = b["input"], b["target"]
    reduction = b.get("reduction", "mean")
    if b.get("size_average") is not None or b.get("reduce") is not None:
        raise unsupported(f"{op} with the deprecated size_average/reduce arguments")
    if op in ("cross_entropy", "nll_loss"):
        if b.get("weight") is not None:
            raise unsupported(f"{op} with class weights")
        if len(nz.shape(x)) != 2 or nz.meta(t).dtype.is_floating_point:
            raise unsupported(f"{op} other than (N, C) logits with class-index targets")
        ignore = int(b.get("ignore_index", -100))
        rows = nz.red("ce_rows" if op == "cross_entropy" else "nll_rows", x, (1, 2), f"{name}_rows",
                      nz.shape(x)[:1], extra=[t],
                      attrs={"ignore_index": ignore,
                             "label_smoothing": float(b.get("label_smoothing", 0.0) or 0.0)})
        if reduction == "none":
            return rows
        if reduction == "sum":
            return nz.red("sum", rows, (0, 1), name, (), attrs={"keepdim": False})
        return nz.red("masked_mean", rows, (0, 1), name, (), extra=[t], attrs={"ignore_index": ignore})
    if op in ("binary_cross_entropy", "binary_cross_entropy_with_logits"):
        if b.get("weight") is not None or b.get("pos_weight") is not None:
            raise unsupported(f"{op} with weights")
    if nz.shape(x) != nz.shape(t):
        raise unsupported(f"{op} with broadcasting")
    attrs = {k: float(b[k]) for k in ("beta", "delta") if b.get(k) is not None}
    if op == "kl_div":
        attrs["log_target"] = bool(b.get("log_target", False))
    elementwise = nz.pw(op, [x, t], base=f"{name}_elem", attrs=attrs)
    rank = len(nz.shape(x))
    if reduction == "none":
        return elementwise
    if reduction == "sum":
        return nz.red("sum", elementwise, (0, rank), name, (), attrs={"keepdim": False})
    if reduction == "mean":
        return nz.red("mean", elementwise, (0, rank), name, (), attrs={"keepdim": False})
    if reduction == "batchmean" and op == "kl_div":
        # the batch size read off a tensor of the same shape that the elementwise kernel reads, not off
        # its output: a read of the output's shape keeps it written, and the `fuse prologue` of the
        # elementwise kernel into the sum (one pass over input and target) could not drop it
        shaped = _same_shape_input(nz, [t, x]) or elementwise
        batch = nz.py(f"{name}_batch", f"{shaped.name}.shape[0]", None, args=[shaped])
        return nz.red("sum_div", elementwise, (0, rank), name, (), extra=[batch],
                      attrs={"keepdim": False})
    raise unsupported(f"{op} with reduction={reduction}")


def _same_shape_input(nz: Builder, refs: list[Any]) -> Ref | None:
    """A program input of the refs' shape that they are, or are computed elementwise from (through
    nodes of that shape), if there is one: a value any step can read without keeping another alive."""
    shape = nz.shape(refs[0])
    todo, seen = list(refs), set()
    while todo:
        ref = todo.pop(0)
        node = nz.meta(ref)
        if node is None or node.name in seen or node.shape != shape:
            continue
        seen.add(node.name)
        if node.kind == "input":
            return ref
        if node.kind == "pw":
            todo.extend(a for a in node.args if isinstance(a, Ref))
    return None
