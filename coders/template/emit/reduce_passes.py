"""The looped form of a reduce kernel: a row (or a column block) longer than one block is walked in
chunks, once per reduction pass (mean, then variance, ...), and once more to write full-size
outputs; a GroupNorm row writes its outputs channel by channel (BY_CHANNEL)."""

from __future__ import annotations

import re

from coders.template import ops as pw
from coders.template.emit import shortcuts
from coders.template.emit.common import REDUCTIONS, BodyEmitter, Writer, needed, ptr, var
from coders.template.emit.reduce_analysis import analyse, full_size_outputs, paired_reductions
from coders.template.emit.reduce_body import body_of, store
from coders.template.emit.reduce_layout import IDENTITY, Layout
from coders.template.emit.reduce_pairs import paired_final, paired_update
from coders.template.ir import Kernel, Op


def looped(w: Writer, kernel: Kernel, lay: Layout) -> None:
    """The kernel's body for a row longer than one block."""
    _Walk(w, kernel, lay).run()


class _Walk:
    """The passes over one looped row: each walks the row's chunks once and finishes the reductions
    it carries; the values a pass settles (per-row scalars) are written after it."""

    def __init__(self, w: Writer, kernel: Kernel, lay: Layout) -> None:
        self.w, self.kernel, self.lay = w, kernel, lay
        self.varies, self.after, self.found = analyse(kernel, lay)
        self.pairs = paired_reductions(kernel)
        self.partners = {first: second for second, (_, first, _) in self.pairs.items()}
        self.riders = {name: e for name, e in self.found.items() if isinstance(e, shortcuts.Expectation)}
        self.body = body_of(kernel, lay, self.varies)
        self.done: set[str] = set()

    def run(self) -> None:
        kernel, lay, w = self.kernel, self.lay, self.w
        self.settle(0)
        passes = max((self.after[op.out] for op in kernel.body if op.op in REDUCTIONS), default=0)
        for stage in range(1, passes + 1):
            self.reduction_pass(stage, passes)
            self.settle(stage)
        full = full_size_outputs(kernel, self.varies)
        if full and lay.groups:
            _by_channel_last_pass(w, kernel, lay, self.body, full, self.done)
        elif full:
            _last_pass(w, kernel, lay, self.body, full, self.done)
        for out in kernel.outputs:
            if not self.varies.get(out.src):
                store(w, lay, out)

    def settle(self, stage: int) -> None:
        """Values that no longer vary once `stage` passes are done (per-row scalars)."""
        for op in self.kernel.body:
            if self.varies[op.out] or self.after[op.out] != stage or op.out in self.done:
                continue
            if op.out in self.found:
                _shortcut_final(self.w, self.kernel, self.lay, op, self.found[op.out], self.body)
            elif op.op not in REDUCTIONS:
                self.w(self.body.statement(op))
            else:
                continue
            self.done.add(op.out)

    def source(self, op: Op) -> str:
        """The varying value a reduction walks (for a paired one, the value its partner walks)."""
        return self.pairs[op.out][2] if op.out in self.pairs else op.args[0]

    def reduction_pass(self, stage: int, passes: int) -> None:
        """Pass `stage`: its accumulators, one walk over the row's chunks, then its reductions' values."""
        w, lay = self.w, self.lay
        reds = [op for op in self.kernel.body if op.op in REDUCTIONS and self.after[op.out] == stage and
                op.out not in self.found]
        accs = {op.out: f"acc_{var(op.out)}" for op in reds}
        w(f"# pass {stage} of {passes}: {', '.join(op.out for op in reds)}")
        self.start(reds, accs)
        riding = {name: e for name, e in self.riders.items() if e.pair in accs}
        for name in riding:
            w(f"acc_{var(name)} = {lay.online_init('sum')}")
        w(f"for start in range(0, {lay.red_size}, {lay.block}):")
        w.indent()
        lay.index(w, "start")
        self.chunk(reds, accs, riding)
        w.dedent()
        self.finish(reds, accs, riding)

    def start(self, reds: list[Op], accs: dict[str, str]) -> None:
        """The pass's accumulators, before its first chunk."""
        for op in reds:
            welford = _paired(self.pairs, op.out, "welford") or \
                _paired(self.pairs, self.partners.get(op.out), "welford")
            if welford:  # merged once per chunk: one value per row (online pairs are per lane)
                self.w(f"{accs[op.out]} = tl.full({self.lay.stat_shape()}, {IDENTITY[op.op]}, tl.float32)")
            elif op.out in self.pairs or op.out in self.partners:
                self.w(f"{accs[op.out]} = {self.lay.online_init(op.op)}")
            else:
                self.w(f"{accs[op.out]} = {self.lay.acc_init(op.op)}")

    def chunk(self, reds: list[Op], accs: dict[str, str], riding: dict) -> None:
        """One chunk of the pass: the values its reductions walk, then their updates. `riding`: the
        expectations that ride on this pass's online pairs (shortcuts.py)."""
        w, body = self.w, self.body
        sources = [self.source(op) for op in reds] + [a for e in riding.values() for a in e.terms]
        for op in needed(self.kernel.body, sources, stop=self.done):
            w(body.statement(op))
        explained = False
        for op in reds:
            if op.out in self.partners:
                continue  # updated together with its partner below
            if op.out in self.pairs:
                extras = {f"acc_{var(n)}": shortcuts.code(e.terms, body.arg) for n, e in riding.items()
                          if e.pair == op.out}
                paired_update(w, self.lay, op, self.pairs[op.out], accs, body, extras, explain=not explained)
                explained = True
            else:
                w(self.lay.acc_update(op.op, accs[op.out], body.arg(op.args[0])))

    def finish(self, reds: list[Op], accs: dict[str, str], riding: dict) -> None:
        """The pass's reductions' values, from their accumulators."""
        for op in reds:
            if op.out in self.partners:
                continue
            if op.out in self.pairs:
                extras = [f"acc_{var(n)}" for n, e in riding.items() if e.pair == op.out]
                paired_final(self.w, self.lay, op, self.pairs[op.out], accs, extras)
                self.done.add(self.pairs[op.out][1])
            else:
                self.w(f"{var(op.out)} = {self.lay.acc_final(op, accs[op.out])}")
            self.body.types[op.out] = "f"
            self.done.add(op.out)


def _write_outputs(w: Writer, kernel: Kernel, lay: Layout, body: BodyEmitter, full: list,
                   done: set[str]) -> None:
    for op in needed(kernel.body, [o.src for o in full], stop=done):
        w(body.statement(op))
    for out in full:
        store(w, lay, out)


def _last_pass(w: Writer, kernel: Kernel, lay: Layout, body: BodyEmitter, full: list, done: set[str]) -> None:
    w("# last pass: compute and write the full-size outputs")
    w(f"for start in range(0, {lay.red_size}, {lay.block}):")
    w.indent()
    lay.index(w, "start")
    _write_outputs(w, kernel, lay, body, full, done)
    w.dedent()


def _by_channel_last_pass(w: Writer, kernel: Kernel, lay: Layout, body: BodyEmitter, full: list,
                          done: set[str]) -> None:
    """GroupNorm's write pass. Channels of at least half a chunk (BY_CHANNEL) are walked one by one:
    a per-channel weight is one scalar load, not a load per element at cols // HW. The walk runs
    backwards, so the chunks the statistics pass read last, the likeliest still in L2, come first.
    (H200 hand probe, groupnorm: 63.4% of copy bandwidth flat, 67.3% by channel backwards at
    BLOCK 8192, 69.6% at 16384; forwards 65.1% / 65.9%.) Shorter channels keep the flat walk."""
    w("if BY_CHANNEL:")
    w.indent()
    w("# last pass: write the outputs channel by channel, backwards (the chunks read last first)")
    w("n_chunks = tl.cdiv(HW, BLOCK)")
    w("for chan_back in range(0, CPG):")
    w.indent()
    w("chan = CPG - 1 - chan_back")
    w("for chunk in range(0, n_chunks):")
    w.indent()
    lay.index(w, "(n_chunks - 1 - chunk) * BLOCK", bound="HW")
    lay.by_channel = True
    _write_outputs(w, kernel, lay, body, full, done)
    lay.by_channel = False
    w.dedent()
    w.dedent()
    w.dedent()
    w("else:")
    w.indent()
    _last_pass(w, kernel, lay, body, full, done)
    w.dedent()


def _paired(pairs: dict[str, tuple[str, str, str]], name: str | None, kind: str) -> bool:
    return name in pairs and pairs[name][0] == kind


def _shortcut_final(w: Writer, kernel: Kernel, lay: Layout, op: Op, found, body: BodyEmitter) -> None:
    """The value of a reduction that took no pass of its own (see shortcuts.py)."""
    if isinstance(found, shortcuts.Pick):
        operand = kernel.operands[found.operand]
        index, column = body.arg(found.index, as_float=False), f"{var(op.out)}_col"
        where = re.sub(r"\bcols\b", column, lay.address(operand.dims, operand.value))
        w(f"# one column is picked: load it, not compare every column with {index}")
        w(f"{column} = tl.where(({index} >= 0) & ({index} < {lay.red_size}), {index}, -1)")
        load = f"tl.load({ptr(operand.value)} + {where}, mask={column} >= 0, other=0)"
        w(f"{var(op.out)} = {load}.to(tl.float32)")
    else:
        m, s = found.max, found.pair
        value = f"total_{var(op.out)}"
        if found.offset:
            value = f"({value} + ({shortcuts.code(found.offset, body.arg)}) * {var(s)})"
        if found.divisor:
            value = f"{value} / {body.arg(found.divisor)}"
        weight = shortcuts.combine({m: 1.0}, found.weight_const, 1.0)
        if weight:  # exp(0) is left out
            value = f"{pw.exp(f'({shortcuts.code(weight, body.arg)})')} * {value}"
        w(f"# softmax-weighted sum from the lanes' rescaled sums: exp({m} + const) * (sum + const * {s})")
        w(f"{var(op.out)} = {value}")
    body.types[op.out] = "f"
