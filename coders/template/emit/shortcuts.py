"""Reductions a looped row kernel can finish without another walk over the row.

expectation: sum(exp(A) * B) (or sum(exp(A) / c * B), c a row constant, as softmax(u) * B is) where
    A = u + (row constants), u the value an online softmax pair
    (m = max(u), s = sum(exp(u - m))) walks, and B = (a linear form of values known before any
    reduction) + (row constants). With weights exp(u - m) the sum is
        exp(m + constA) * (sum_j exp(u_j - m) * E_j + constB * s)
    and sum_j exp(u_j - m) * E_j is kept next to s, rescaled with it: KL divergence, soft-target
    cross-entropy and the entropy of a softmax are read once, not twice
    (kl_div_rows, H200 suite runs: 0.30 ms in one pass, 0.47 ms in two).
pick: sum(where(ridx == i, x, 0)) with i a row constant and x a loaded row is x[i]: one load instead
    of a compare and select per element (cross-entropy's target logit).
"""

from __future__ import annotations

from dataclasses import dataclass

from coders.template.ir import Kernel, Op

Linear = dict  # atom name (None for a number) -> coefficient


@dataclass
class Expectation:
    pair: str  # the online pair's sum: its running sum rescales this one's
    max: str  # the online pair's max
    weight_const: Linear  # constA
    terms: Linear  # E: atoms known before any reduction
    offset: Linear  # constB
    divisor: str | None = None  # a row constant the weights are divided by (softmax = exp(..) / sum)


@dataclass
class Pick:
    index: str  # the row constant that names the column
    operand: int  # the loaded row operand


def linear(name, ops: dict[str, Op], varies: dict[str, bool], after: dict[str, int]) -> Linear | None:
    """`name` as a sum of coefficient * atom, atoms being row constants or values known before any
    reduction; None when it is not linear in those (a product of two row values, an exp, ...)."""
    if not isinstance(name, str):
        return {None: float(name)}
    op = ops.get(name)
    if op is not None and op.op in ("add", "sub") and len(op.args) == 2 and not op.attrs:
        a, b = (linear(x, ops, varies, after) for x in op.args)
        if a is None or b is None:
            return None
        return combine(a, b, 1.0 if op.op == "add" else -1.0)
    if op is not None and op.op == "neg":
        a = linear(op.args[0], ops, varies, after)
        return None if a is None else _scale(a, -1.0)
    if op is not None and op.op == "mul" and any(not isinstance(x, str) for x in op.args):
        number = next(x for x in op.args if not isinstance(x, str))
        other = next((x for x in op.args if isinstance(x, str)), None)
        a = linear(other, ops, varies, after) if other is not None else {None: 1.0}
        return None if a is None else _scale(a, float(number))
    plain_div = op is not None and op.op == "div" and not op.attrs.get("rounding_mode")
    if plain_div and not isinstance(op.args[1], str):
        a = linear(op.args[0], ops, varies, after)
        return None if a is None or not op.args[1] else _scale(a, 1.0 / float(op.args[1]))
    if not varies.get(name) or after.get(name) == 0:
        return {name: 1.0}
    return None


def combine(a: Linear, b: Linear, sign: float) -> Linear:
    out = dict(a)
    for k, v in b.items():
        out[k] = out.get(k, 0.0) + sign * v
    return {k: v for k, v in out.items() if v != 0.0}


def _scale(a: Linear, c: float) -> Linear:
    return {k: v * c for k, v in a.items() if v * c != 0.0}


def split(form: Linear, varies: dict[str, bool]) -> tuple[Linear, Linear]:
    """(the part that varies along the row, the row-constant part)."""
    row = {k: v for k, v in form.items() if k is not None and varies.get(k)}
    return row, {k: v for k, v in form.items() if k not in row}


def expectation(op: Op, kernel: Kernel, online: dict[str, tuple[str, str]], varies: dict[str, bool],
                after: dict[str, int]) -> Expectation | None:
    """`op` as a softmax expectation of one of the kernel's online pairs (`online` maps the pair's sum
    to (its max, the value it walks)), or None."""
    if op.op != "sum" or not isinstance(op.args[0], str):
        return None
    ops = {o.out: o for o in kernel.body}
    arg = ops.get(op.args[0])
    if arg is None:
        return None
    if arg.op == "mul" and all(isinstance(a, str) for a in arg.args):
        found = [(a, b) for a, b in (arg.args, arg.args[::-1]) if _weight(a, ops, varies)]
        if not found:
            return None
        weight_name, other = found[0]
    elif _weight(arg.out, ops, varies):
        weight_name, other = arg.out, 1.0
    else:
        return None
    exp_op, divisor = _weight(weight_name, ops, varies)
    weight = linear(exp_op.args[0], ops, varies, after)
    rest = linear(other, ops, varies, after)
    if weight is None or rest is None:
        return None
    weight_row, weight_const = split(weight, varies)
    terms, offset = split(rest, varies)
    for pair, (m, u) in online.items():
        constants = [*weight_const, *offset, divisor]
        ready = all(after.get(k, 0) <= after[m] for k in constants if k is not None)
        if weight_row == {u: 1.0} and ready:
            return Expectation(pair, m, weight_const, terms, offset, divisor)
    return None


def _weight(name: str, ops: dict[str, Op], varies: dict[str, bool]) -> tuple[Op, str | None] | None:
    """exp(A), or exp(A) / c with c a row constant: (the exp, c)."""
    op = ops.get(name)
    if op is not None and op.op == "exp":
        return op, None
    if op is not None and op.op == "div" and not op.attrs.get("rounding_mode") and op.args[0] in ops \
            and ops[op.args[0]].op == "exp" and isinstance(op.args[1], str) and not varies.get(op.args[1]):
        return ops[op.args[0]], op.args[1]
    return None


def pick(op: Op, kernel: Kernel, varies: dict[str, bool], after: dict[str, int]) -> Pick | None:
    """`op` = sum(where(ridx == i, x, 0)) with x a loaded float row and i a row constant, or None."""
    ops = {o.out: o for o in kernel.body}
    if op.op != "sum" or op.args[0] not in ops:
        return None
    where = ops[op.args[0]]
    if where.op != "where" or where.args[2] not in (0, 0.0) or where.args[0] not in ops:
        return None
    cond, value = ops[where.args[0]], ops.get(where.args[1])
    if cond.op != "eq" or value is None or value.op != "load":
        return None
    operand = kernel.operands[value.args[0]]
    if operand.scalar or operand.integer:
        return None
    for a, b in (cond.args, cond.args[::-1]):
        if isinstance(a, str) and a in ops and ops[a].op == "ridx" and isinstance(b, str) \
                and not varies.get(b) and after.get(b) == 0:
            return Pick(b, value.args[0])
    return None


def code(form: Linear, arg) -> str:
    """A linear form as a Triton expression (`arg` spells an atom)."""
    parts = []
    for atom, c in form.items():
        x = repr(c) if atom is None else arg(atom)
        if atom is None:
            parts.append(x)
        elif c == 1.0:
            parts.append(x)
        elif c == -1.0:
            parts.append(f"-{x}")
        else:
            parts.append(f"{c!r} * {x}")
    if not parts:
        return "0.0"
    text = parts[0]
    for p in parts[1:]:
        text += f" - {p[1:]}" if p.startswith("-") else f" + {p}"
    return text
