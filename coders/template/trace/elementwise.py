"""Handlers of elementwise ops: activations, arithmetic, comparisons, casts, and the no-ops (dropout
in eval mode, aliases)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from coders.template.trace.graph import Ref, unsupported
from coders.template.trace.interface import Builder


def unary(nz: Builder, name: str, op: str, b: dict, result: Any) -> Ref:
    if op == "relu6":
        return nz.add(name, "pw", "hardtanh", [b["input"]], {"min_val": 0.0, "max_val": 6.0},
                      like=result)
    return nz.add(name, "pw", op, [b["input"]], like=result)


# The activations whose parameters are attributes of the node (numbers known at trace time): the
# attributes from the bound arguments, with PyTorch's defaults.
ACTIVATION_ATTRS: dict[str, Callable[[dict], dict[str, Any]]] = {
    "gelu": lambda b: {"approximate": b.get("approximate", "none")},
    "leaky_relu": lambda b: {"negative_slope": float(b.get("negative_slope", 0.01))},
    "elu": lambda b: {"alpha": float(b.get("alpha", 1.0))},
    "celu": lambda b: {"alpha": float(b.get("alpha", 1.0))},
    "softplus": lambda b: {"beta": float(b.get("beta", 1.0)), "threshold": float(b.get("threshold", 20.0))},
    "hardtanh": lambda b: {"min_val": float(b.get("min_val", -1.0)), "max_val": float(b.get("max_val", 1.0))},
    "threshold": lambda b: {"threshold": float(b["threshold"]), "value": float(b["value"])},
    "hardshrink": lambda b: {"lambd": float(b.get("lambd", 0.5))},
    "softshrink": lambda b: {"lambd": float(b.get("lambd", 0.5))},
}


def pointwise(nz: Builder, name: str, op: str, b: dict, result: Any) -> Ref:
    """Elementwise ops with parameters; args are tensors, Python numbers or shape values."""
    x = b.get("input")
    attrs: dict[str, Any] = {}
    if op in ACTIVATION_ATTRS:
        attrs = ACTIVATION_ATTRS[op](b)
        args = [x]
    elif op == "clamp":
        lo, hi = b.get("min"), b.get("max")
        if isinstance(lo, Ref) or isinstance(hi, Ref):
            args = [x, lo, hi]
            attrs = {"tensor_bounds": True}
        else:
            attrs = {"min": lo, "max": hi}
            args = [x]
    elif op in ("add", "sub", "rsub"):
        other, alpha = b["other"], b.get("alpha", 1)
        if alpha != 1:
            other = nz.pw("mul", [other, alpha], base=f"{name}_alpha")
        args = [other, x] if op == "rsub" else [x, other]
        op = "sub" if op == "rsub" else op
    elif op == "div":
        mode = b.get("rounding_mode")
        if mode not in (None, "floor", "trunc"):
            raise unsupported(f"div rounding_mode={mode}")
        attrs = {"rounding_mode": mode} if mode else {}
        args = [x, b["other"]]
    elif op == "pow":
        exponent = b["exponent"]
        args = [x, exponent]
    elif op in ("masked_fill",):
        args = [b["mask"], b["value"], x]
        op = "where"
    elif op == "where":
        args = [b["condition"], x, b["other"]]
    elif op == "lerp":
        args = [x, b["end"], b["weight"]]
    elif op == "addcmul":
        args = [x, b["tensor1"], b["tensor2"]]
        attrs = {"value": float(b.get("value", 1))}
    else:
        args = [x] + [b[k] for k in ("other",) if k in b]
    return nz.add(name, "pw", op, args, attrs, like=result)


def cast(nz: Builder, name: str, op: str, b: dict, result: Any) -> Ref:
    """Casts keep the traced dtype; a cast to the input's own dtype (or a device move) is a no-op."""
    x = b["input"]
    if not isinstance(result, torch.Tensor):
        raise unsupported(f"{op} on a non-tensor")
    if result.dtype == nz.meta(x).dtype:
        return x
    return nz.add(name, "pw", "cast", [x], {"dtype": str(result.dtype).removeprefix("torch.")},
                  like=result)


def dropout(nz: Builder, name: str, op: str, b: dict, result: Any) -> Ref:
    if b.get("training", op != "dropout"):  # F.dropout defaults to training=True
        raise unsupported("dropout in training mode")
    return b["input"]


def alias(nz: Builder, name: str, op: str, b: dict, result: Any) -> Ref:
    return b["input"]


def bitwise_not(nz: Builder, name: str, op: str, b: dict, result: Any) -> Ref:
    """`~mask` of a bool tensor is its logical not (of an integer one, a bitwise not: not taken)."""
    if result is None or result.dtype != torch.bool:
        raise unsupported("~ (bitwise not) of a tensor other than bool")
    return pointwise(nz, name, "logical_not", b, result)
