"""What a reduce kernel's body computes, and when: the reductions that pair up to share a pass,
which values vary along the reduced dims, and after which pass each value is known."""

from __future__ import annotations

from typing import TYPE_CHECKING

from coders.template.emit import shortcuts
from coders.template.emit.common import REDUCTIONS
from coders.template.ir import Kernel

if TYPE_CHECKING:  # the layout reads paired_reductions: only its type is needed here
    from coders.template.emit.reduce_layout import Layout


def paired_reductions(kernel: Kernel) -> dict[str, tuple[str, str, str]]:
    """Reductions that can share the pass of the one they depend on.

    online:  s = sum(exp(u - m)) with m = max(u)        (softmax: running max and rescaled sum)
    welford: v = mean((x - mu) * (x - mu)) with mu = mean(x)   (norms: running mean and M2)
    Maps the second reduction to (kind, first reduction, the value both reduce over).
    """
    ops = {op.out: op for op in kernel.body}
    pairs: dict[str, tuple[str, str, str]] = {}
    taken: set[str] = set()

    def is_op(name, kind):
        return isinstance(name, str) and name in ops and ops[name].op == kind

    for op in kernel.body:
        if op.op == "sum" and is_op(op.args[0], "exp"):
            diff = ops[op.args[0]].args[0]
            if is_op(diff, "sub") and is_op(ops[diff].args[1], "max"):
                u, m = ops[diff].args
                if ops[m].args[0] == u and not ops[m].attrs and m not in taken:
                    pairs[op.out] = ("online", m, u)
                    taken.add(m)
        if op.op == "mean" and is_op(op.args[0], "mul"):
            a, b = ops[op.args[0]].args
            if a == b and is_op(a, "sub") and is_op(ops[a].args[1], "mean"):
                x, mu = ops[a].args
                if ops[mu].args[0] == x and not ops[mu].attrs.get("correction") and mu not in taken:
                    pairs[op.out] = ("welford", mu, x)
                    taken.add(mu)
    return pairs


def analyse(kernel: Kernel, lay: Layout, pair: bool = True) -> tuple[dict[str, bool], dict[str, int], dict]:
    """Which values vary along the reduced dims, after which reduction pass each is known, and the
    reductions that finish without a pass of their own (shortcuts: expectations and picks)."""
    varies: dict[str, bool] = {}
    after: dict[str, int] = {}
    found: dict = {}
    red = set(lay.red_dims)
    pairs = paired_reductions(kernel) if pair else {}
    online = {s: (m, u) for s, (kind, m, u) in pairs.items() if kind == "online"}
    for op in kernel.body:
        args = [a for a in op.args if isinstance(a, str) and a in varies]
        if op.op == "load":
            varies[op.out] = bool(set(kernel.operands[op.args[0]].dims) & red)
            after[op.out] = 0
        elif op.op == "ridx":
            varies[op.out], after[op.out] = True, 0
        elif op.op in REDUCTIONS:
            varies[op.out] = False
            if op.out in pairs:  # computed in the same pass as its partner
                after[op.out] = after[pairs[op.out][1]]
            elif pair and not lay.column and not lay.groups and \
                    (picked := shortcuts.pick(op, kernel, varies, after)):  # one load, before any pass
                found[op.out], after[op.out] = picked, 0
            elif pair and (expected := shortcuts.expectation(op, kernel, online, varies, after)):
                found[op.out], after[op.out] = expected, after[expected.max]  # next to its online pair
            else:
                after[op.out] = 1 + max((after[a] for a in args), default=0)
        else:
            varies[op.out] = any(varies[a] for a in args)
            after[op.out] = max((after[a] for a in args), default=0)
    return varies, after, found


def full_size_outputs(kernel: Kernel, varies: dict[str, bool]) -> list:
    """Outputs that vary along the reduced dims: written element by element, in the last pass."""
    return [o for o in kernel.outputs if varies.get(o.src)]


def writes_by_channel(kernel: Kernel, lay: Layout) -> bool:
    """A GroupNorm kernel with full-size outputs: its looped write pass can walk channel by channel."""
    return bool(lay.groups) and bool(full_size_outputs(kernel, analyse(kernel, lay)[0]))
