"""An einsum that is not one matmul, as a chain of pairwise steps (trace/matmul.py takes the one-matmul
equations): operands are combined left to right, as torch.einsum does without opt_einsum.

Each step combines the running result with the next operand. Letters both hold and a later operand or
the output still needs are batch letters; letters both hold and nothing later needs are contracted;
the rest belong to one side. With letters to contract, the step is a bmm: each side permuted to
(batch, own, contracted) and reshaped to three dims, the product reshaped back to (batch, left's own,
right's own). Without, it is an elementwise product of the two sides viewed on one letter order.
The reshapes read their sizes from the operands at run time (`a.shape[2] * a.shape[4]`), so the
program stays size-generic. Ellipses, repeated letters in a term and a letter that only one
operand holds and nothing needs (a sum on its own) are not taken.
"""

from __future__ import annotations

from typing import Any

import torch

from coders.template.trace.graph import Ref, unsupported
from coders.template.trace.interface import Builder


def einsum_chain(nz: Builder, name: str, equation: str, operands: list[Ref], result: Any) -> Ref:
    terms, out = _parse(equation, len(operands))
    acc, term = operands[0], terms[0]
    for i, (operand, other) in enumerate(zip(operands[1:], terms[1:], strict=True), start=1):
        needed = set(out).union(*terms[i + 1:])
        _refuse_lone_sums(equation, term, other, needed)
        acc, term = _step(nz, f"{name}_{i}", acc, term, operand, other, needed)
    if set(term) != set(out):
        raise unsupported(f"einsum {equation!r} summing letters of one operand")
    perm = [term.index(letter) for letter in out]
    if perm == list(range(len(perm))):
        return acc
    return _view(nz, name, f"{acc.name}.permute{_tuple(perm)}", acc, [_shape(nz, acc)[p] for p in perm])


def _parse(equation: str, count: int) -> tuple[list[str], str]:
    text = equation.replace(" ", "")
    if "->" not in text or "." in text:
        raise unsupported(f"einsum {equation!r} without an explicit output, or with an ellipsis")
    lhs, out = text.split("->")
    terms = lhs.split(",")
    if len(terms) != count or any(len(set(t)) != len(t) or not t.isalpha() for t in terms + [out]):
        raise unsupported(f"einsum {equation!r} (a term repeats a letter, or the operands do not match)")
    return terms, out


def _refuse_lone_sums(equation: str, left: str, right: str, needed: set[str]) -> None:
    lone = [letter for letter in left + right
            if (letter in left) != (letter in right) and letter not in needed]
    if lone:
        raise unsupported(f"einsum {equation!r} summing letters of one operand ({''.join(lone)})")


def _step(nz: Builder, name: str, a: Ref, ta: str, b: Ref, tb: str, needed: set[str]) -> tuple[Ref, str]:
    batch = [letter for letter in ta if letter in tb and letter in needed]
    contracted = [letter for letter in ta if letter in tb and letter not in needed]
    own_a = [letter for letter in ta if letter not in tb]
    own_b = [letter for letter in tb if letter not in ta]
    if not contracted:
        return _product(nz, name, a, ta, b, tb, ta + "".join(own_b)), ta + "".join(own_b)
    a3 = _as_3d(nz, f"{name}_a", a, ta, [batch, own_a, contracted])
    b3 = _as_3d(nz, f"{name}_b", b, tb, [batch, contracted, own_b])
    dtype = nz.meta(a).dtype
    mm_shape = (_shape(nz, a3)[0], _shape(nz, a3)[1], _shape(nz, b3)[2])
    mm = nz.add(f"{name}_mm", "matmul", "bmm", [a3, b3, None], {"form": "bmm"},
                shape=mm_shape, dtype=dtype)
    letters = batch + own_a + own_b
    sizes = [_size_expr(a, ta, letter) if letter in ta else _size_expr(b, tb, letter) for letter in letters]
    shape = [_letter_size(nz, a, ta, b, tb, letter) for letter in letters]
    return _view(nz, name, f"{mm.name}.reshape({', '.join(sizes)})", mm, shape), "".join(letters)


def _product(nz: Builder, name: str, a: Ref, ta: str, b: Ref, tb: str, target: str) -> Ref:
    """a * b with both viewed on `target`'s letters (unit dims where a side lacks a letter)."""
    a_view = _on_letters(nz, f"{name}_a", a, ta, target)
    b_view = _on_letters(nz, f"{name}_b", b, tb, target)
    return nz.pw("mul", [a_view, b_view], base=name)


def _on_letters(nz: Builder, name: str, x: Ref, term: str, target: str) -> Ref:
    order = [letter for letter in target if letter in term]
    perm = [term.index(letter) for letter in order]
    expr = x.name if perm == list(range(len(perm))) else f"{x.name}.permute{_tuple(perm)}"
    if len(order) == len(target) and expr == x.name:
        return x
    index = ", ".join(":" if letter in term else "None" for letter in target)
    shape = [_shape(nz, x)[term.index(letter)] if letter in term else 1 for letter in target]
    return _view(nz, name, f"{expr}[{index}]", x, shape)


def _as_3d(nz: Builder, name: str, x: Ref, term: str, groups: list[list[str]]) -> Ref:
    """x permuted to the groups' letter order and reshaped to one dim per group."""
    perm = [term.index(letter) for group in groups for letter in group]
    sizes = [" * ".join(_size_expr(x, term, letter) for letter in group) or "1" for group in groups]
    shape = [_prod(_shape(nz, x)[term.index(letter)] for letter in group) for group in groups]
    expr = f"{x.name}.permute{_tuple(perm)}.reshape({', '.join(sizes)})"
    return _view(nz, name, expr, x, shape)


def _view(nz: Builder, name: str, expr: str, src: Ref, shape: list[int]) -> Ref:
    like = torch.empty(shape, dtype=nz.meta(src).dtype, device="meta")
    return nz.py(name, expr, like, args=[src])


def _size_expr(x: Ref, term: str, letter: str) -> str:
    return f"{x.name}.shape[{term.index(letter)}]"


def _letter_size(nz: Builder, a: Ref, ta: str, b: Ref, tb: str, letter: str) -> int:
    return _shape(nz, a)[ta.index(letter)] if letter in ta else _shape(nz, b)[tb.index(letter)]


def _shape(nz: Builder, x: Ref) -> tuple[int, ...]:
    return nz.shape(x)


def _prod(values: Any) -> int:
    out = 1
    for value in values:
        out *= value
    return out


def _tuple(values: list[int]) -> str:
    return "(" + ", ".join(map(str, values)) + ")"
