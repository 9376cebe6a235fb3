"""Elementwise ops as Triton expressions (fp32 in, fp32 out; comparisons give int1).

Only `tl.*` forms that the CPU interpreter and triton 3.6+ both run: no libdevice, so tanh is
written through the sigmoid and softplus through exp/log.
"""

from __future__ import annotations

import math
from typing import Any

UNARY = ("relu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt", "abs", "neg", "erf", "sin", "cos",
         "exp2", "log2", "floor", "ceil", "reciprocal", "square", "silu", "mish", "hardswish",
         "hardsigmoid", "selu", "softsign", "relu6", "logsigmoid", "log1p", "expm1", "sign",
         "tanhshrink")

COMPARISONS = {"gt": ">", "lt": "<", "ge": ">=", "le": "<=", "eq": "==", "ne": "!="}
BOOL_OPS = set(COMPARISONS) | {"logical_not", "cast_bool"}

_SELU_ALPHA = 1.6732632423543772
_SELU_SCALE = 1.0507009873554805


def literal(value: Any) -> str:
    """A Python number as a Triton fp32 literal."""
    if isinstance(value, bool):
        return "1.0" if value else "0.0"
    value = float(value)
    if math.isnan(value):
        return "float('nan')"
    if math.isinf(value):
        return "float('inf')" if value > 0 else "float('-inf')"
    return repr(value)


def _tanh(x: str) -> str:
    return f"(2.0 * tl.sigmoid(2.0 * {x}) - 1.0)"


LOG2E = "1.4426950408889634"


def exp(x: str) -> str:
    """e**x as tl.exp2(x * log2(e)): one ex2.approx.ftz. tl.exp lowers to the non-flushing
    ex2.approx.f32, which sm_90 runs as three more instructions per value (a range test and two
    scalings); row kernels are instruction-bound enough for that to show (softmax_channels_fp16 on
    an H200). A result below 2**-126 (x < -87.3) flushes to 0. `x` must bind tighter than `*`."""
    return f"tl.exp2({x} * {LOG2E})"


def _softplus(x: str) -> str:
    # log(1 + exp(x)) without overflow: x + log(1 + exp(-x)) for large x
    return f"(tl.maximum({x}, 0.0) + tl.log(1.0 + {exp(f'-tl.abs({x})')}))"


def expr(op: str, a: list[str], attrs: dict[str, Any]) -> str:
    """The Triton expression for `op` over already-named args `a`."""
    x = a[0] if a else ""
    simple = {
        "relu": f"tl.maximum({x}, 0.0)",
        "sigmoid": f"tl.sigmoid({x})",
        "tanh": _tanh(x),
        "exp": exp(x),
        "log": f"tl.log({x})",
        "sqrt": f"tl.sqrt({x})",
        "rsqrt": f"tl.rsqrt({x})",
        "abs": f"tl.abs({x})",
        "neg": f"-{x}",
        "erf": f"tl.erf({x})",
        "sin": f"tl.sin({x})",
        "cos": f"tl.cos({x})",
        "exp2": f"tl.exp2({x})",
        "log2": f"tl.log2({x})",
        "floor": f"tl.floor({x})",
        "ceil": f"tl.ceil({x})",
        "reciprocal": f"1.0 / {x}",
        "square": f"{x} * {x}",
        "silu": f"{x} * tl.sigmoid({x})",
        "mish": f"{x} * {_tanh(_softplus(x))}",
        "hardswish": f"{x} * tl.minimum(tl.maximum({x} + 3.0, 0.0), 6.0) / 6.0",
        "hardsigmoid": f"tl.minimum(tl.maximum({x} / 6.0 + 0.5, 0.0), 1.0)",
        "selu": f"{_SELU_SCALE!r} * tl.where({x} > 0.0, {x}, {_SELU_ALPHA!r} * ({exp(x)} - 1.0))",
        "softsign": f"{x} / (1.0 + tl.abs({x}))",
        "logsigmoid": f"-{_softplus('-' + x)}",
        "log1p": f"tl.log(1.0 + {x})",
        "expm1": f"({exp(x)} - 1.0)",
        "sign": f"tl.where({x} > 0.0, 1.0, tl.where({x} < 0.0, -1.0, 0.0))",
        "tanhshrink": f"{x} - {_tanh(x)}",
        "logical_not": f"{x} == 0",
        "cast_bool": f"{x} != 0",
    }
    if op in simple:
        return simple[op]
    if op in COMPARISONS:
        return f"{a[0]} {COMPARISONS[op]} {a[1]}"
    if op == "add":
        return f"{a[0]} + {a[1]}"
    if op == "sub":
        return f"{a[0]} - {a[1]}"
    if op == "mul":
        return f"{a[0]} * {a[1]}"
    if op == "div":
        mode = attrs.get("rounding_mode")
        if mode == "floor":
            return f"tl.floor({a[0]} / {a[1]})"
        if mode == "trunc":
            q = f"({a[0]} / {a[1]})"
            return f"tl.where({q} >= 0.0, tl.floor({q}), tl.ceil({q}))"
        return f"{a[0]} / {a[1]}"
    if op == "floordiv":
        return f"tl.floor({a[0]} / {a[1]})"
    if op == "mod":  # Python semantics: the sign of the divisor
        return f"{a[0]} - {a[1]} * tl.floor({a[0]} / {a[1]})"
    if op == "pow":
        return _pow(a[0], a[1], attrs)
    if op == "maximum":
        return f"tl.maximum({a[0]}, {a[1]})"
    if op == "minimum":
        return f"tl.minimum({a[0]}, {a[1]})"
    if op == "where":
        return f"tl.where({a[0]}, {a[1]}, {a[2]})"
    if op == "lerp":
        return f"{a[0]} + {a[2]} * ({a[1]} - {a[0]})"
    if op == "addcmul":
        return f"{a[0]} + {literal(attrs['value'])} * {a[1]} * {a[2]}"
    if op == "gelu":
        if attrs.get("approximate", "none") == "tanh":
            inner = f"0.7978845608028654 * ({x} + 0.044715 * {x} * {x} * {x})"
            return f"0.5 * {x} * (1.0 + {_tanh(inner)})"
        return f"0.5 * {x} * (1.0 + tl.erf({x} * 0.7071067811865476))"
    if op == "leaky_relu":
        return f"tl.where({x} >= 0.0, {x}, {x} * {literal(attrs['negative_slope'])})"
    if op == "elu":
        return f"tl.where({x} > 0.0, {x}, {literal(attrs['alpha'])} * ({exp(x)} - 1.0))"
    if op == "celu":
        alpha = literal(attrs["alpha"])
        return f"tl.where({x} > 0.0, {x}, {alpha} * ({exp(f'{x} / {alpha}')} - 1.0))"
    if op == "softplus":
        beta, threshold = literal(attrs["beta"]), literal(attrs["threshold"])
        soft = f"{_softplus(f'({x} * {beta})')} / {beta}"
        return f"tl.where({x} * {beta} > {threshold}, {x}, {soft})"
    if op == "hardtanh":
        return f"tl.minimum(tl.maximum({x}, {literal(attrs['min_val'])}), {literal(attrs['max_val'])})"
    if op == "clamp":
        if attrs.get("tensor_bounds"):
            out = x
            if a[1] != "None":
                out = f"tl.maximum({out}, {a[1]})"
            if a[2] != "None":
                out = f"tl.minimum({out}, {a[2]})"
            return out
        out = x
        if attrs.get("min") is not None:
            out = f"tl.maximum({out}, {literal(attrs['min'])})"
        if attrs.get("max") is not None:
            out = f"tl.minimum({out}, {literal(attrs['max'])})"
        return out
    if op == "threshold":
        return f"tl.where({x} > {literal(attrs['threshold'])}, {x}, {literal(attrs['value'])})"
    if op == "hardshrink":
        return f"tl.where(tl.abs({x}) > {literal(attrs['lambd'])}, {x}, 0.0)"
    if op == "softshrink":
        lam = literal(attrs["lambd"])
        return f"tl.where({x} > {lam}, {x} - {lam}, tl.where({x} < -{lam}, {x} + {lam}, 0.0))"
    if op == "cast":
        dtype = attrs.get("dtype")
        if dtype in ("float16", "bfloat16"):  # round like the reference, keep computing in fp32
            return f"{x}.to(tl.{dtype}).to(tl.float32)"
        return f"{x}.to(tl.float32)"
    raise KeyError(op)


def _pow(x: str, e: str, attrs: dict[str, Any]) -> str:
    exponent = attrs.get("exponent")
    if exponent is not None:
        if exponent == 0:
            return f"({x} * 0.0 + 1.0)"
        if exponent == 0.5:
            return f"tl.sqrt({x})"
        if exponent == -0.5:
            return f"tl.rsqrt({x})"
        if float(exponent).is_integer() and 1 <= abs(exponent) <= 4:
            prod = " * ".join([x] * int(abs(exponent)))
            return prod if exponent > 0 else f"1.0 / ({prod})"
    # general case; like torch, NaN for a negative base with a non-integer exponent
    if attrs.get("base") is not None:
        return f"tl.exp2({e} * {literal(math.log2(attrs['base']))})"
    if exponent is not None and float(exponent).is_integer():
        # |x|^e, signed for an odd e: exp2(e * log2(x)) is NaN for every negative x
        magnitude = f"tl.exp2({literal(exponent)} * tl.log2(tl.abs({x})))"
        return f"tl.where({x} < 0.0, -{magnitude}, {magnitude})" if int(exponent) % 2 else magnitude
    # a constant exponent is an attribute: the body's second argument is then a placeholder 0
    power = literal(exponent) if exponent is not None else e
    return f"tl.exp2({power} * tl.log2({x}))"
