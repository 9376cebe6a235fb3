"""Python source for py nodes: a traced value or call written back as the expression the generated
program evaluates (shape arithmetic, views, an allowed library call)."""

from __future__ import annotations

import math
import operator
from typing import Any

import torch
import torch.fx as fx

from coders.template.trace.graph import Ref, unsupported

_OPERATORS = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
              operator.floordiv: "//", operator.mod: "%", operator.pow: "**", operator.eq: "==",
              operator.ne: "!=", operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">="}


def render(value: Any) -> str:
    if isinstance(value, Ref):
        return value.name
    if isinstance(value, torch.dtype):
        return str(value)
    if isinstance(value, slice):
        parts = [render(x) if x is not None else "" for x in (value.start, value.stop)]
        text = ":".join(parts)
        return text + (f":{render(value.step)}" if value.step is not None else "")
    if value is Ellipsis:
        return "..."
    if isinstance(value, tuple):
        inner = ", ".join(render(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(render(v) for v in value) + "]"
    if isinstance(value, torch.Size):
        return render(tuple(value))
    if isinstance(value, float) and not math.isfinite(value):
        return f"float('{value}')"
    if isinstance(value, str | int | float | bool) or value is None:
        return repr(value)
    raise unsupported(f"constant of type {type(value).__name__} in the forward")


def render_call(n: fx.Node, args: list, kwargs: dict) -> str:
    kw = [f"{k}={render(v)}" for k, v in kwargs.items()]
    if n.op == "call_method":
        rest = ", ".join([render(a) for a in args[1:]] + kw)
        return f"{render(args[0])}.{n.target}({rest})"
    target = n.target
    if target is operator.getitem:
        index = args[1]
        inner = ", ".join(render(i) for i in index) if isinstance(index, tuple) else render(index)
        return f"{render(args[0])}[{inner}]"
    if target is getattr:
        return f"{render(args[0])}.{args[1]}"
    if target in _OPERATORS:
        return f"({render(args[0])} {_OPERATORS[target]} {render(args[1])})"
    if target is operator.neg:
        return f"(-{render(args[0])})"
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__name__", str(target))
    if module.startswith("torch") or getattr(torch, name, None) is target:
        prefix = "torch."
    elif module in ("math", "builtins") or target in (min, max, int, float, len, abs):
        prefix = "math." if module == "math" else ""
    else:
        raise unsupported(f"call to {name}")
    inner = ", ".join([render(a) for a in args] + kw)
    return f"{prefix}{name}({inner})"
