"""Handlers of convolutions, transposed convolutions and pools."""

from __future__ import annotations

from typing import Any

from coders.template import pooling
from coders.template.trace.graph import Ref, flat, unsupported
from coders.template.trace.interface import Builder
from coders.template.trace.render import render


def conv(nz: Builder, name: str, op: str, b: dict, result: Any) -> Ref:
    """A Triton convolution, lowered by coders/template/conv_lower.py. Its geometry stays as the
    call gave it; numbers only: a computed stride is no structure to specialize a kernel on."""
    attrs = {"stride": b.get("stride", 1), "padding": b.get("padding", 0),
             "dilation": b.get("dilation", 1), "groups": b.get("groups", 1)}
    for key, value in attrs.items():
        if any(isinstance(v, Ref) for v in flat([value])):
            raise unsupported(f"{op} with a computed {key}")
        attrs[key] = list(value) if isinstance(value, list | tuple) else value
    return nz.add(name, "conv", op, [b["input"], b["weight"], b.get("bias")], attrs, like=result)


def conv_transpose(nz: Builder, name: str, op: str, b: dict, result: Any) -> Ref:
    from coders.template import conv_transpose_lower  # imported late: it imports this package

    return conv_transpose_lower.trace_function(nz, name, op, b, result)


def pool(nz: Builder, name: str, op: str, b: dict, result: Any) -> Any:
    return pool_node(nz, name, pooling.from_call(op, b), b["input"], result)


def pool_node(nz: Builder, name: str, call: pooling.PoolCall, x: Ref, result: Any) -> Any:
    """A pool node and the tuple of its parameters (coders/template/pooling.py); with indices, the
    (values, indices) pair. Global average pooling is a mean over the pooled dims."""
    rank = len(nz.shape(x))
    if not nz.meta(x).dtype.is_floating_point or rank not in (call.nd + 1, call.nd + 2):
        raise unsupported(f"{call.kind} pooling of a {rank}-D {nz.meta(x).dtype} tensor")
    values = result[0] if call.indices else result
    if call.is_global_average():
        return nz.red("mean", x, (rank - call.nd, rank), name, tuple(values.shape), attrs={"keepdim": True})
    fields = pooling.FIELDS[call.kind]
    expr = "(" + ", ".join(call.exprs.get(f) or render(call.values[f]) for f in fields) + ",)"
    refs = [v for v in flat(list(call.values.values())) if isinstance(v, Ref)]
    params = nz.py(f"{name}_params", expr, None, args=refs)
    pool = nz.add(name, "pool", call.kind, [x, params], pooling.node_attrs(call), like=values)
    if not call.indices:
        return pool
    indices = nz.add(f"{name}_indices", "pool_indices", "", [pool], like=result[1])
    nz.meta(pool).attrs["indices"] = indices.name
    return (pool, indices)


def pad(nz: Builder, name: str, op: str, b: dict, result: Any) -> Ref:
    """F.pad with a constant: glue, as a cat is (a fill and a copy, no arithmetic), so the program
    calls it; the other modes compute (a reflection's gather) and are not taken."""
    mode, value = b.get("mode", "constant"), b.get("value")
    if mode != "constant":
        raise unsupported(f"F.pad mode={mode!r} (only 'constant')")
    if isinstance(value, Ref):
        raise unsupported("F.pad with a computed value")
    x = b["input"]
    expr = f"F.pad({x.name}, {render(list(b['pad']))}, value={render(float(value or 0))})"
    return nz.py(name, expr, result, args=[x, *[v for v in flat([b["pad"]]) if isinstance(v, Ref)]])
