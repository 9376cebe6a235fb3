"""Pooling in the template coder: max and average pooling over the last 1-3 dims, fixed or adaptive.

Every form (nn.MaxPoolNd, nn.AvgPoolNd, nn.AdaptiveAvg/MaxPoolNd, their F.* and torch.* functions)
becomes one graph node of kind "pool" over its input and a Python tuple of its parameters. The tuple
is read at run time, from the module where there is one (`self.pool.kernel_size`, ...): a task size
that changes the kernel size still runs. The node lowers to one "pool" kernel (emit/pool.py): in
the rows form (the port's, for fixed windows without indices: emit/pool_rows.py) each program walks
a strip of output columns down the rows, reading each input row once; otherwise each program owns a
block of output elements (flat, or in the tile form a tile of output rows x columns) and walks
their windows. `return_indices` adds a
"pool_indices" node that reads the pool; it lowers to a second, int64 output of the same kernel.

Adaptive average pooling to size 1 along every pooled dim (global average pooling) stays a `mean`
reduction over those dims, which reads the input contiguously and is faster.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn as nn
import torch.nn.functional as F

from coders.template.emit.pool_forms import port_config
from coders.template.ir import Kernel, Op, Operand, Output, self_path
from mtmc.protocols import CoderError

# the parameter tuple of each kind, in the order the launcher unpacks it
FIELDS = {
    "max": ("kernel_size", "stride", "padding", "dilation", "ceil_mode"),
    "avg": ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override"),
    "adaptive_max": ("output_size",),
    "adaptive_avg": ("output_size",),
}
DEFAULTS = {"stride": None, "padding": 0, "dilation": 1, "ceil_mode": False, "count_include_pad": True,
            "divisor_override": None}
_MAX = ["input", "kernel_size", "stride", "padding", "dilation", "ceil_mode", "return_indices"]
_AVG = ["input", "kernel_size", "stride", "padding", "ceil_mode", "count_include_pad", "divisor_override"]
_ADAPTIVE = ["input", "output_size", "return_indices"]



def _functions() -> list[tuple[str, list[str], list[Any]]]:
    """(canonical name, parameter names, the fx call targets that mean it)."""
    out = []
    for nd in (1, 2, 3):
        def targets(name: str) -> list[Any]:
            return [f for f in (getattr(F, name, None), getattr(torch, name, None)) if f is not None]
        out += [(f"max_pool{nd}d", _MAX, targets(f"max_pool{nd}d")),
                (f"max_pool{nd}d_with_indices", _MAX, targets(f"max_pool{nd}d_with_indices")),
                (f"avg_pool{nd}d", _AVG, targets(f"avg_pool{nd}d")),
                (f"adaptive_avg_pool{nd}d", _ADAPTIVE[:2], targets(f"adaptive_avg_pool{nd}d")),
                (f"adaptive_max_pool{nd}d", _ADAPTIVE, [getattr(F, f"adaptive_max_pool{nd}d")]),
                # torch.adaptive_max_pool1d returns (values, indices), like the _with_indices forms
                (f"adaptive_max_pool{nd}d_with_indices", _ADAPTIVE,
                 targets(f"adaptive_max_pool{nd}d_with_indices") +
                 ([torch.adaptive_max_pool1d] if nd == 1 else []))]
    return out


FUNCTIONS = _functions()
CANONICAL = [name for name, _, _ in FUNCTIONS]
MODULES: dict[type, tuple[str, int]] = {
    **{getattr(nn, f"MaxPool{nd}d"): ("max", nd) for nd in (1, 2, 3)},
    **{getattr(nn, f"AvgPool{nd}d"): ("avg", nd) for nd in (1, 2, 3)},
    **{getattr(nn, f"AdaptiveMaxPool{nd}d"): ("adaptive_max", nd) for nd in (1, 2, 3)},
    **{getattr(nn, f"AdaptiveAvgPool{nd}d"): ("adaptive_avg", nd) for nd in (1, 2, 3)},
}


def unsupported(what: str) -> CoderError:
    return CoderError(f"not supported by the template coder: {what}")


@dataclass
class PoolCall:
    """One pooling call: its kind, how many trailing dims it pools and its parameters."""
    kind: str  # max | avg | adaptive_max | adaptive_avg
    nd: int
    indices: bool  # return_indices: a second output, the argmax's flat position in the pooled dims
    values: dict[str, Any]  # traced parameter values (graph refs where the reference computes them)
    exprs: dict[str, str] = field(default_factory=dict)  # run-time expressions (module attributes)

    def is_global_average(self) -> bool:
        size = self.values["output_size"] if self.kind == "adaptive_avg" else None
        sizes = size if isinstance(size, list | tuple) else [size]
        return size is not None and all(s == 1 for s in sizes)

    def window(self) -> int | None:
        """Elements in one window at the traced parameters, None when computed by the reference."""
        if self.kind.startswith("adaptive"):
            return None
        kernel = self.values["kernel_size"]
        sizes = kernel if isinstance(kernel, list | tuple) else [kernel] * self.nd
        if not all(isinstance(s, int) for s in sizes):
            return None
        return math.prod(sizes) if len(sizes) == self.nd else sizes[0] ** self.nd

    def fixed(self) -> dict[str, Any] | None:
        """The traced parameters of a fixed window, the per-dim ones as lists of nd ints (no stride:
        the kernel size); None for an adaptive pool or one whose parameters the reference computes.
        Fusion reads them (fuse/pooled.py); the kernels read the parameters at run time."""
        if self.kind.startswith("adaptive"):
            return None
        out: dict[str, Any] = {}
        for name in FIELDS[self.kind]:
            value = self.values[name]
            if name == "stride" and value is None:
                value = out["kernel_size"]
            if name in ("kernel_size", "stride", "padding", "dilation"):
                value = list(value) if isinstance(value, list | tuple) else [value]
                value = value * self.nd if len(value) == 1 else value
                if len(value) != self.nd or not all(type(v) is int for v in value):
                    return None
            elif not isinstance(value, bool | int | None):
                return None
            out[name] = value
        return out


def from_call(canonical: str, bound: dict[str, Any]) -> PoolCall:
    """A PoolCall for a function call bound to its parameter names."""
    name = canonical.removesuffix("_with_indices")
    nd = int(name[-2])
    kind = name.removesuffix(f"_pool{nd}d")
    indices = canonical.endswith("_with_indices") or bool(bound.get("return_indices", False))
    if not isinstance(bound.get("return_indices", False), bool) or \
            not all(isinstance(bound.get(k, False), bool) for k in ("ceil_mode", "count_include_pad")):
        raise unsupported(f"{canonical} with a computed return_indices, ceil_mode or count_include_pad")
    values = {f: bound.get(f, DEFAULTS.get(f)) for f in FIELDS[kind]}
    if values.get("stride") in ((), []):  # torch.max_pool2d's default stride: the kernel size
        values["stride"] = None
    return PoolCall(kind, nd, indices, values)


def from_module(module: nn.Module, path: str) -> PoolCall:
    """A PoolCall for a pooling module; its parameters are read from the module at run time."""
    kind, nd = MODULES[type(module)]
    values = {f: getattr(module, f, DEFAULTS.get(f)) for f in FIELDS[kind]}
    exprs = {f: f"{self_path(path)}.{f}" if hasattr(module, f) else repr(DEFAULTS[f]) for f in FIELDS[kind]}
    return PoolCall(kind, nd, bool(getattr(module, "return_indices", False)), values, exprs)


def node_attrs(call: PoolCall) -> dict[str, Any]:
    return {"nd": call.nd, "window": call.window(), "fixed": call.fixed()}


# --------------------------------------------------------------------------------------------------
# lowering
# --------------------------------------------------------------------------------------------------

def lower_pool(graph: Any, node: Any, used: set[str]) -> Kernel:
    """The pool kernel of a graph node: load the input, pool it, store the values (and indices)."""
    x, params = node.args[0].name, node.args[1].name
    rank = len(node.shape)
    full = list(range(rank))
    body = [Op(x, "load", [0]), Op(node.name, "pool", [x])]
    outputs = [Output(node.name, node.name, full, f"like:{x}")]
    index = node.attrs.get("indices")
    if index in used:
        body.append(Op(index, "pool_index", [node.name]))  # the argmax of that pool
        outputs.append(Output(index, index, full, "int64"))
    space = {"input": x, "params": params, "pool": node.op, "nd": node.attrs["nd"],
             "window": node.attrs["window"], "traced": list(node.shape),
             "in_traced": list(graph.node(x).shape), "fixed": node.attrs.get("fixed")}
    kernel = Kernel(name=node.name, kind="pool", space=space, operands=[Operand(x, full)], body=body,
                    outputs=outputs, config={})
    kernel.config = port_config(kernel)  # the rows form where it applies, else the flat form
    return kernel
