"""Elementwise ops as Triton expressions (fp32 in, fp32 out; comparisons give int1).

Only `tl.*` forms that the CPU interpreter and triton 3.6+ both run: no libdevice, so tanh is
written through the sigmoid and softplus through exp/log.
"""

from __future__ import annotations

import math
from collections.abc import Callable
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


Expression = Callable[[list[str], dict[str, Any]], str]  # (named args, the op's attrs) -> Triton


def expr(op: str, a: list[str], attrs: dict[str, Any]) -> str:
    """The Triton expression for `op` over already-named args `a` (KeyError for an unknown op)."""
    return EXPRESSIONS[op](a, attrs)


def _unary(form: Callable[[str], str]) -> Expression:
    """An op of its first argument alone."""
    return lambda a, attrs: form(a[0] if a else "")


def _div(a: list[str], attrs: dict[str, Any]) -> str:
    mode = attrs.get("rounding_mode")
    if mode == "floor":
        return f"tl.floor({a[0]} / {a[1]})"
    if mode == "trunc":
        q = f"({a[0]} / {a[1]})"
        return f"tl.where({q} >= 0.0, tl.floor({q}), tl.ceil({q}))"
    return f"{a[0]} / {a[1]}"


def _gelu(a: list[str], attrs: dict[str, Any]) -> str:
    x = a[0]
    if attrs.get("approximate", "none") == "tanh":
        inner = f"0.7978845608028654 * ({x} + 0.044715 * {x} * {x} * {x})"
        return f"0.5 * {x} * (1.0 + {_tanh(inner)})"
    return f"0.5 * {x} * (1.0 + tl.erf({x} * 0.7071067811865476))"


def _celu(a: list[str], attrs: dict[str, Any]) -> str:
    x, alpha = a[0], literal(attrs["alpha"])
    return f"tl.where({x} > 0.0, {x}, {alpha} * ({exp(f'{x} / {alpha}')} - 1.0))"


def _softplus_op(a: list[str], attrs: dict[str, Any]) -> str:
    x, beta, threshold = a[0], literal(attrs["beta"]), literal(attrs["threshold"])
    soft = f"{_softplus(f'({x} * {beta})')} / {beta}"
    return f"tl.where({x} * {beta} > {threshold}, {x}, {soft})"


def _clamp(a: list[str], attrs: dict[str, Any]) -> str:
    out = a[0]
    if attrs.get("tensor_bounds"):
        if a[1] != "None":
            out = f"tl.maximum({out}, {a[1]})"
        if a[2] != "None":
            out = f"tl.minimum({out}, {a[2]})"
        return out
    if attrs.get("min") is not None:
        out = f"tl.maximum({out}, {literal(attrs['min'])})"
    if attrs.get("max") is not None:
        out = f"tl.minimum({out}, {literal(attrs['max'])})"
    return out


def _softshrink(a: list[str], attrs: dict[str, Any]) -> str:
    x, lam = a[0], literal(attrs["lambd"])
    return f"tl.where({x} > {lam}, {x} - {lam}, tl.where({x} < -{lam}, {x} + {lam}, 0.0))"


def _cast(a: list[str], attrs: dict[str, Any]) -> str:
    dtype = attrs.get("dtype")
    if dtype in ("float16", "bfloat16"):  # round like the reference, keep computing in fp32
        return f"{a[0]}.to(tl.{dtype}).to(tl.float32)"
    return f"{a[0]}.to(tl.float32)"


# Every elementwise op the IR knows, by canonical name: its Triton expression.
EXPRESSIONS: dict[str, Expression] = {
    "relu": _unary(lambda x: f"tl.maximum({x}, 0.0)"),
    "sigmoid": _unary(lambda x: f"tl.sigmoid({x})"),
    "tanh": _unary(_tanh),
    "exp": _unary(exp),
    "log": _unary(lambda x: f"tl.log({x})"),
    "sqrt": _unary(lambda x: f"tl.sqrt({x})"),
    "rsqrt": _unary(lambda x: f"tl.rsqrt({x})"),
    "abs": _unary(lambda x: f"tl.abs({x})"),
    "neg": _unary(lambda x: f"-{x}"),
    "erf": _unary(lambda x: f"tl.erf({x})"),
    "sin": _unary(lambda x: f"tl.sin({x})"),
    "cos": _unary(lambda x: f"tl.cos({x})"),
    "exp2": _unary(lambda x: f"tl.exp2({x})"),
    "log2": _unary(lambda x: f"tl.log2({x})"),
    "floor": _unary(lambda x: f"tl.floor({x})"),
    "ceil": _unary(lambda x: f"tl.ceil({x})"),
    "reciprocal": _unary(lambda x: f"1.0 / {x}"),
    "square": _unary(lambda x: f"{x} * {x}"),
    "silu": _unary(lambda x: f"{x} * tl.sigmoid({x})"),
    "mish": _unary(lambda x: f"{x} * {_tanh(_softplus(x))}"),
    "hardswish": _unary(lambda x: f"{x} * tl.minimum(tl.maximum({x} + 3.0, 0.0), 6.0) / 6.0"),
    "hardsigmoid": _unary(lambda x: f"tl.minimum(tl.maximum({x} / 6.0 + 0.5, 0.0), 1.0)"),
    "selu": _unary(lambda x: f"{_SELU_SCALE!r} * tl.where({x} > 0.0, {x}, {_SELU_ALPHA!r} * "
                             f"({exp(x)} - 1.0))"),
    "softsign": _unary(lambda x: f"{x} / (1.0 + tl.abs({x}))"),
    "logsigmoid": _unary(lambda x: f"-{_softplus('-' + x)}"),
    "log1p": _unary(lambda x: f"tl.log(1.0 + {x})"),
    "expm1": _unary(lambda x: f"({exp(x)} - 1.0)"),
    "sign": _unary(lambda x: f"tl.where({x} > 0.0, 1.0, tl.where({x} < 0.0, -1.0, 0.0))"),
    "tanhshrink": _unary(lambda x: f"{x} - {_tanh(x)}"),
    "logical_not": _unary(lambda x: f"{x} == 0"),
    "cast_bool": _unary(lambda x: f"{x} != 0"),
    **{op: (lambda a, attrs, sign=sign: f"{a[0]} {sign} {a[1]}") for op, sign in COMPARISONS.items()},
    "add": lambda a, attrs: f"{a[0]} + {a[1]}",
    "sub": lambda a, attrs: f"{a[0]} - {a[1]}",
    "mul": lambda a, attrs: f"{a[0]} * {a[1]}",
    "div": _div,
    "floordiv": lambda a, attrs: f"tl.floor({a[0]} / {a[1]})",
    "mod": lambda a, attrs: f"{a[0]} - {a[1]} * tl.floor({a[0]} / {a[1]})",  # the sign of the divisor
    "pow": lambda a, attrs: _pow(a[0], a[1], attrs),
    "maximum": lambda a, attrs: f"tl.maximum({a[0]}, {a[1]})",
    "minimum": lambda a, attrs: f"tl.minimum({a[0]}, {a[1]})",
    "where": lambda a, attrs: f"tl.where({a[0]}, {a[1]}, {a[2]})",
    "lerp": lambda a, attrs: f"{a[0]} + {a[2]} * ({a[1]} - {a[0]})",
    "addcmul": lambda a, attrs: f"{a[0]} + {literal(attrs['value'])} * {a[1]} * {a[2]}",
    "gelu": _gelu,
    "leaky_relu": lambda a, attrs: (f"tl.where({a[0]} >= 0.0, {a[0]}, "
                                    f"{a[0]} * {literal(attrs['negative_slope'])})"),
    "elu": lambda a, attrs: (f"tl.where({a[0]} > 0.0, {a[0]}, "
                             f"{literal(attrs['alpha'])} * ({exp(a[0])} - 1.0))"),
    "celu": _celu,
    "softplus": _softplus_op,
    "hardtanh": lambda a, attrs: (f"tl.minimum(tl.maximum({a[0]}, {literal(attrs['min_val'])}), "
                                  f"{literal(attrs['max_val'])})"),
    "clamp": _clamp,
    "threshold": lambda a, attrs: (f"tl.where({a[0]} > {literal(attrs['threshold'])}, {a[0]}, "
                                   f"{literal(attrs['value'])})"),
    "hardshrink": lambda a, attrs: f"tl.where(tl.abs({a[0]}) > {literal(attrs['lambd'])}, {a[0]}, 0.0)",
    "softshrink": _softshrink,
    "cast": _cast,
}


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
