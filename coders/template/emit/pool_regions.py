"""A pool kernel's body split around its pool op (emit/pool.py emits it; fuse reads it)."""

from __future__ import annotations

import copy
import re

from coders.template.emit.common import BodyEmitter, FusionError, Writer, needed, var
from coders.template.ir import Kernel, Op

UNROLL = 64  # windows of at most this many taps (at the traced sizes) are unrolled
NAN_MAX = "tl.maximum({}, {}, propagate_nan=tl.PropagateNan.ALL)"  # max.NaN.f32: a NaN wins
# the template's own names; body values that match are renamed before emitting
_TEMPLATE = re.compile(r"^(oi|wi|kk|lo|hi|ok|od|IN|OUT|SZ|KS|ST|PD|DL|KMAX)\d+$|^(win|plane)_|^odr$|"
                       r"^(ROWS|KV|WIDE|WIDE_PLANE|COUNT_PAD|DIVISOR|BAND|RING|OVERLAP|HTAPS|STEP|SLIDE|SHIFT|STACK|SEP)$")


class Regions:
    """A pool kernel's body split around its pool op: hoisted prologue, per-tap prologue, epilogue."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.nd = kernel.space["nd"]
        self.rank = len(kernel.space["traced"])
        self.n_outer = self.rank - self.nd
        self.adaptive = kernel.space["pool"].startswith("adaptive")
        self.kind = kernel.space["pool"].removeprefix("adaptive_")
        pools = [op for op in kernel.body if op.op == "pool"]
        if len(pools) != 1:
            raise FusionError("a pool kernel pools exactly once")
        self.pool = pools[0]
        self.index = next((op for op in kernel.body if op.op == "pool_index"), None)
        window = needed(kernel.body, [self.pool.args[0]])
        self.window = {op.out for op in window}
        per_tap: set[str] = set()
        for op in window:
            if (op.op == "load" and self.spans_pooled(kernel.operands[op.args[0]].dims)) or \
                    any(a in per_tap for a in op.args if isinstance(a, str)):
                per_tap.add(op.out)
        self.hoisted = [op for op in window if op.out not in per_tap]
        self.per_tap = [op for op in window if op.out in per_tap]
        self.after = [op for op in kernel.body if op.out not in self.window and
                      op.op not in ("pool", "pool_index")]
        self.per_tap_names = per_tap

    def spans_pooled(self, dims: list[int]) -> bool:
        return any(d >= self.n_outer for d in dims)

    def split_outer(self) -> bool:
        """Some operand spans only part of the outer dims: each needs its own index."""
        outer = list(range(self.n_outer))
        return any([d for d in o.dims if d < self.n_outer] not in ([], outer)
                   for o in self.kernel.operands if not o.scalar)

    def address(self, dims: list[int], region: str) -> str:
        """Offset of an element of a dense operand spanning `dims`, at the tap ("win") or output."""
        if dims == list(range(self.rank)):
            return "offs" if region == "out" else "outer * plane_in + win_pos"
        outer = [d for d in dims if d < self.n_outer]
        axes = [("outer", "")] if outer and outer == list(range(self.n_outer)) else \
            [(f"od{d}", f"SZ{d}") for d in outer]
        for d in dims:
            if d >= self.n_outer:
                j = d - self.n_outer
                axes.append((f"wi{j}", f"IN{j}") if region == "win" else (f"oi{j}", f"OUT{j}"))
        terms = [" * ".join([index] + [size for _, size in axes[i + 1:]])
                 for i, (index, _) in enumerate(axes)]
        return " + ".join(terms) or "0"


def check(kernel: Kernel) -> None:
    """Raise FusionError where the emitter cannot run the kernel's body as written."""
    regions = Regions(kernel)
    if regions.pool.args[0] not in regions.per_tap_names:
        raise FusionError("the pooled value does not read the pool's input")
    if regions.index is not None and regions.index.args != [regions.pool.out]:
        raise FusionError("the indices belong to another pooled value")
    if any(a in regions.per_tap_names for op in regions.after for a in op.args if isinstance(a, str)):
        raise FusionError("an op after the pool reads a window element")
    full = list(range(regions.rank))
    for out in kernel.outputs:
        if out.dims != full or out.src in regions.window:
            raise FusionError(f"a pool kernel writes whole outputs after the pool only ({out.value})")


def renamed(kernel: Kernel) -> Kernel:
    """The kernel with body values that would shadow the template's names renamed."""
    names = {op.out for op in kernel.body}
    clash = {n for n in names if _TEMPLATE.match(n) or n == "outer"}
    if not clash:
        return kernel
    new = copy.deepcopy(kernel)
    rename = {}
    for n in sorted(clash):
        fresh = f"v_{n}"
        while fresh in names:
            fresh += "_"
        names.add(fresh)
        rename[n] = fresh
    new.body = [Op(rename.get(op.out, op.out), op.op,
                   [rename.get(a, a) if isinstance(a, str) else a for a in op.args], dict(op.attrs))
                for op in new.body]
    for out in new.outputs:
        out.src = rename.get(out.src, out.src)
    return new


def emit_outer_split(w: Writer, regions: Regions) -> None:
    """od{d}, the index along each outer dim, where some operand spans only part of them."""
    if regions.split_outer():
        w("odr = outer")
        for d in reversed(range(regions.n_outer)):
            w(f"od{d} = odr % SZ{d}")
            w(f"odr = odr // SZ{d}")


def emit_pooled(w: Writer, regions: Regions, body: BodyEmitter) -> None:
    """The pool op's value (and index) from the window's running max or sum `win_acc` (every form
    ends its window loops here)."""
    nd = regions.nd
    out = var(regions.pool.out)
    if regions.kind == "max":
        w(f"{out} = win_acc")
    elif regions.adaptive:
        w(f"win_count = ({' * '.join(f'(hi{j} - lo{j})' for j in range(nd))}).to(tl.float32)")
        w(f"{out} = win_acc / win_count")
    else:
        for j in range(nd):
            w(f"hi{j} = tl.minimum(lo{j} + KS{j}, IN{j} + PD{j})")
        w("if DIVISOR != 0:")
        w("    win_count = DIVISOR * 1.0")
        w("elif COUNT_PAD:")
        w(f"    win_count = ({' * '.join(f'(hi{j} - lo{j})' for j in range(nd))}).to(tl.float32)")
        w("else:")
        clipped = " * ".join(f"(tl.minimum(hi{j}, IN{j}) - tl.maximum(lo{j}, 0))" for j in range(nd))
        w(f"    win_count = ({clipped}).to(tl.float32)")
        w(f"{out} = win_acc / win_count")
    body.types[regions.pool.out] = "f"
    if regions.index is not None:
        w(f"{var(regions.index.out)} = win_arg")
        body.types[regions.index.out] = "i"
