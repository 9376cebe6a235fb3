"""Reduction kernels: softmax, norms, losses, sums; anything whose body reduces one dim range.

The input is viewed as (outer, reduced, inner). With no inner dims (the usual case: the last dims
are reduced) each program owns one row and walks its columns; otherwise each program owns a block
of inner columns and walks the reduced rows (a column reduction). GroupNorm's rows are
(batch, group) pairs of an NC... tensor.

A row that fits in one BLOCK is loaded once and kept in registers (ONE_PASS). A longer row is
walked in chunks, once per dependent reduction (mean, then variance, ...) and once more to write
full-size outputs. A GroupNorm row writes its outputs channel by channel (BY_CHANNEL, see
_by_channel_last_pass).
"""

from __future__ import annotations

import re

from coders.template import ops as pw
from coders.template.emit import shortcuts
from coders.template.emit.common import (
    REDUCTIONS,
    Axis,
    BodyEmitter,
    FusionError,
    Writer,
    address,
    mask_of,
    needed,
    ptr,
    var,
)
from coders.template.emit.launch import Launcher, autotune_configs, kernel_header, output_alloc, wrap_call
from coders.template.ir import Kernel, Op

_IDENTITY = {"sum": "0.0", "mean": "0.0", "max": 'float("-inf")', "min": 'float("inf")'}
_COMBINE = {"sum": "tl.sum", "mean": "tl.sum", "max": "tl.max", "min": "tl.min"}


class Layout:
    """How a reduce kernel walks its space: index variables, masks, reductions."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.rank = len(kernel.space["traced"])
        d0, d1 = kernel.space["red"]
        self.d0, self.d1 = d0, d1
        self.groups = kernel.space.get("groups")
        self.by_channel = False  # a group row addressed as channel `chan`, columns within it
        self.column = d1 < self.rank and not self.groups
        self.red_dims = list(range(d0, d1))
        if self.column:
            self.axes = [Axis(list(range(d0)), "outer", "n_outer", None),
                         Axis(self.red_dims, "rows", "n_red", "row_mask"),
                         Axis(list(range(d1, self.rank)), "inner", "n_inner", "inner_mask")]
        else:
            self.axes = [Axis(list(range(d0)), "row", "n_rows", None),
                         Axis(self.red_dims, "cols", "n_cols", "col_mask")]
        self.block = "BLOCK_M" if self.column else "BLOCK"
        self.red_mask = "row_mask" if self.column else "col_mask"
        self.red_size = "n_red" if self.column else "n_cols"
        self.keep = ", keep_dims=True" if self.column else ""
        # a row kernel with an online softmax walks its chunks as (BLOCK // LANE_GROUP, LANE_GROUP)
        # tiles: each thread's neighbours share one running max (see _online_groups)
        kinds = {kind for kind, _, _ in paired_reductions(kernel).values()}
        self.online = "online" in kinds
        self.grouped = self.online and "welford" not in kinds and not self.column and not self.groups \
            and kernel.config.get("split_k", 1) <= 1 \
            and chunk_of(kernel.config, self.online) >= 2 * LANE_GROUP

    # --- addressing -------------------------------------------------------------------------------
    def address(self, dims: list[int], what: str) -> str:
        if self.groups:
            return self._group_address(dims, what)
        return address(self.axes, dims, what)

    def mask(self, dims: list[int], what: str) -> str | None:
        if self.groups:
            first = 2 if self.by_channel else 1  # by channel, a per-channel value is one scalar
            return "col_mask" if set(dims) & set(range(first, self.rank)) else None
        return mask_of(self.axes, dims, what)

    def _group_address(self, dims: list[int], what: str) -> str:
        """Rows are (batch, group); a row's columns are its channels' elements, channel-major."""
        rest = list(range(1, self.rank))
        within = " + chan * HW + cols" if self.by_channel else " + cols"  # by channel: cols < HW
        if dims == [1] and self.by_channel:
            return "(row % G) * CPG + chan"
        if dims == [0, *rest]:
            return "row * n_cols" + within
        if dims == rest:
            return "(row % G) * n_cols" + within
        if dims == [1]:
            return "(row % G) * CPG + cols // HW"
        if dims == [0]:
            return "row // G"
        if dims == []:
            return "0"
        raise FusionError(f"{what}: a GroupNorm kernel cannot address dims {dims}")

    def check(self) -> None:
        for o in self.kernel.operands:
            self.address(o.dims, f"operand {o.value}")
        for out in self.kernel.outputs:
            self.address(out.dims, f"output {out.value}")

    # --- walking ----------------------------------------------------------------------------------
    def program(self, w: Writer) -> None:
        if self.column:
            w("pid = tl.program_id(0)")
            w("n_inner_blocks = tl.cdiv(n_inner, BLOCK_N)")
            w("outer = (pid // n_inner_blocks).to(tl.int64)")
            w("inner = (pid % n_inner_blocks) * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]")
            w("inner_mask = inner < n_inner")
        elif not self.kernel.config.get("persistent"):
            w("row = tl.program_id(0).to(tl.int64)")

    def index(self, w: Writer, start: str | None, bound: str | None = None) -> None:
        offset = f"{start} + " if start else ""
        if self.column:
            w(f"rows = {offset}tl.arange(0, BLOCK_M)[:, None]")
            w(f"row_mask = rows < {bound or 'n_red'}")
        elif self.grouped and start:
            g = LANE_GROUP
            w(f"cols = {offset}tl.arange(0, BLOCK // {g})[:, None] * {g} + tl.arange(0, {g})[None, :]")
            w(f"col_mask = cols < {bound or 'n_cols'}")
        else:
            w(f"cols = {offset}tl.arange(0, BLOCK)")
            w(f"col_mask = cols < {bound or 'n_cols'}")

    def reduce(self, op: Op, arg: str) -> str:
        kind = op.op
        text = f"{_COMBINE[kind]}(tl.where({self.red_mask}, {arg}, {_IDENTITY[kind]}), axis=0{self.keep})"
        return text + self._mean_divisor(op)

    def _mean_divisor(self, op: Op) -> str:
        if op.op != "mean":
            return ""
        correction = op.attrs.get("correction", 0)
        return f" / ({self.red_size} - {correction!r})" if correction else f" / {self.red_size}"

    def acc_shape(self) -> str:
        if self.grouped:
            return f"[BLOCK // {LANE_GROUP}, {LANE_GROUP}]"
        return "[BLOCK_M, BLOCK_N]" if self.column else "[BLOCK]"

    def online_init(self, kind: str) -> str:
        """An online softmax's running statistic: one per group of LANE_GROUP neighbours, or per lane."""
        if self.grouped:
            return f"tl.full([BLOCK // {LANE_GROUP}], {_IDENTITY[kind]}, tl.float32)"
        return self.acc_init(kind)

    def stat_shape(self) -> str:
        """A running statistic of a row: one scalar, or one per inner column of a column reduction."""
        return "[1, BLOCK_N]" if self.column else "[]"

    def acc_init(self, kind: str) -> str:
        if kind in ("sum", "mean"):
            return f"tl.zeros({self.acc_shape()}, dtype=tl.float32)"
        return f"tl.full({self.acc_shape()}, {_IDENTITY[kind]}, tl.float32)"

    def acc_update(self, kind: str, acc: str, arg: str) -> str:
        masked = f"tl.where({self.red_mask}, {arg}, {_IDENTITY[kind]})"
        if kind in ("sum", "mean"):
            return f"{acc} += {masked}"
        fn = "tl.maximum" if kind == "max" else "tl.minimum"
        return f"{acc} = {fn}({acc}, {masked})"

    def acc_final(self, op: Op, acc: str) -> str:
        axis = "" if self.grouped else ", axis=0"  # no axis: a (groups, LANE_GROUP) tile reduces whole
        return f"{_COMBINE[op.op]}({acc}{axis}{self.keep})" + self._mean_divisor(op)

    def ridx(self) -> str:
        return "rows" if self.column else "cols"


_SIZES = ("n_rows", "n_cols", "n_red", "n_inner", "G", "CPG", "HW")


def _build(kernel: Kernel, depth: int) -> tuple[Layout, list[str], list[str]]:
    """The kernel body's lines and the size arguments it reads."""
    lay = Layout(kernel)
    lay.check()
    bw = Writer()
    bw.depth = depth
    lay.program(bw)
    if kernel.config.get("persistent") and not lay.column:
        bw("# persistent: a fixed set of programs strides over the rows")
        bw("for row_id in range(tl.program_id(0), n_rows, tl.num_programs(0)):")
        bw.indent()
        bw("row = tl.cast(row_id, tl.int64)")
    bw("if ONE_PASS:")
    bw.indent()
    bw("# the whole reduced extent fits in one block: load once, keep it in registers")
    _one_pass(bw, kernel, lay)
    bw.dedent()
    bw("else:")
    bw.indent()
    _looped(bw, kernel, lay)
    text = "\n".join(bw.lines)
    return lay, bw.lines, [s for s in _SIZES if re.search(rf"\b{s}\b", text)]


def emit_kernel(w: Writer, kernel: Kernel, name: str) -> None:
    if kernel.config.get("split_k", 1) > 1:
        _emit_split(w, kernel, name)
        return
    lay, lines, sizes = _build(kernel, w.depth + 1)
    operands = [var(o.value) if o.scalar else ptr(o.value) for o in kernel.operands]
    params = operands + [ptr(o.value) for o in kernel.outputs] + sizes
    constexprs = ["BLOCK_M", "BLOCK_N"] if lay.column else ["BLOCK"]
    if writes_by_channel(kernel, lay):
        constexprs.append("BY_CHANNEL")
    kernel_header(w, kernel, name, params, constexprs + ["ONE_PASS"],
                  key=["n_red", "n_inner"] if lay.column else ["n_cols"])
    w.lines.extend(lines)
    w()


def _loader(kernel: Kernel, lay: Layout):
    def load(op: Op, operand) -> str:
        if operand.scalar:
            return f"{var(operand.value)} * 1.0" if not operand.integer else var(operand.value)
        where = lay.address(operand.dims, operand.value)
        mask = lay.mask(operand.dims, operand.value)
        if where == "0":
            text = f"tl.load({ptr(operand.value)})"
        elif mask:
            text = f"tl.load({ptr(operand.value)} + {where}, mask={mask}, other=0)"
        else:
            text = f"tl.load({ptr(operand.value)} + {where})"
        return text if operand.integer else f"{text}.to(tl.float32)"
    return load


def _body(kernel: Kernel, lay: Layout, varies: dict[str, bool]) -> BodyEmitter:
    body = BodyEmitter(kernel, _loader(kernel, lay), special={"ridx": lambda op: lay.ridx()},
                       reduce=lay.reduce)

    def divide(op: Op) -> str:
        a, b = (body.arg(x) for x in op.args)
        by_row_value = isinstance(op.args[1], str) and not varies.get(op.args[1], True)
        if by_row_value and varies.get(op.args[0]) and not op.attrs.get("rounding_mode"):
            # one reciprocal per row and a multiply per value (softmax's e / sum): fp32 `/` is a
            # division sequence per value (softmax_channels_fp16, H200: 80% -> 85% of copy bandwidth)
            return f"{a} * (1.0 / {b})"
        return pw.expr("div", [a, b], op.attrs)

    body.special["div"] = divide
    return body


def _store(w: Writer, lay: Layout, out) -> None:
    where = lay.address(out.dims, out.value)
    mask = lay.mask(out.dims, out.value)
    value = f"{var(out.src)}.to({ptr(out.value)}.dtype.element_ty)"
    target = f"{ptr(out.value)} + {where}" if where != "0" else ptr(out.value)
    w(f"tl.store({target}, {value}" + (f", mask={mask})" if mask else ")"))


def _one_pass(w: Writer, kernel: Kernel, lay: Layout) -> None:
    lay.index(w, None)
    body = _body(kernel, lay, _analyse(kernel, lay)[0])
    for op in kernel.body:
        w(body.statement(op))
    for out in kernel.outputs:
        _store(w, lay, out)


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


def _analyse(kernel: Kernel, lay: Layout, pair: bool = True) -> tuple[dict[str, bool], dict[str, int], dict]:
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


def _looped(w: Writer, kernel: Kernel, lay: Layout) -> None:
    varies, after, found = _analyse(kernel, lay)
    pairs = paired_reductions(kernel)
    partners = {first: second for second, (_, first, _) in pairs.items()}
    riders = {name: e for name, e in found.items() if isinstance(e, shortcuts.Expectation)}
    body = _body(kernel, lay, varies)
    done: set[str] = set()

    def settle(stage: int) -> None:
        """Values that no longer vary once `stage` passes are done (per-row scalars)."""
        for op in kernel.body:
            if varies[op.out] or after[op.out] != stage or op.out in done:
                continue
            if op.out in found:
                _shortcut_final(w, kernel, lay, op, found[op.out], body)
            elif op.op not in REDUCTIONS:
                w(body.statement(op))
            else:
                continue
            done.add(op.out)

    def source(op: Op) -> str:
        """The varying value a reduction walks (for a paired one, the value its partner walks)."""
        return pairs[op.out][2] if op.out in pairs else op.args[0]

    settle(0)
    passes = max((after[op.out] for op in kernel.body if op.op in REDUCTIONS), default=0)
    for stage in range(1, passes + 1):
        reds = [op for op in kernel.body if op.op in REDUCTIONS and after[op.out] == stage and
                op.out not in found]
        accs = {op.out: f"acc_{var(op.out)}" for op in reds}
        w(f"# pass {stage} of {passes}: {', '.join(op.out for op in reds)}")
        for op in reds:
            welford = _paired(pairs, op.out, "welford") or _paired(pairs, partners.get(op.out), "welford")
            if welford:  # merged once per chunk: one value per row (online pairs are per lane)
                w(f"{accs[op.out]} = tl.full({lay.stat_shape()}, {_IDENTITY[op.op]}, tl.float32)")
            elif op.out in pairs or op.out in partners:
                w(f"{accs[op.out]} = {lay.online_init(op.op)}")
            else:
                w(f"{accs[op.out]} = {lay.acc_init(op.op)}")
        mine = {name: e for name, e in riders.items() if e.pair in accs}
        for name in mine:
            w(f"acc_{var(name)} = {lay.online_init('sum')}")
        w(f"for start in range(0, {lay.red_size}, {lay.block}):")
        w.indent()
        lay.index(w, "start")
        sources = [source(op) for op in reds] + [a for e in mine.values() for a in e.terms]
        for op in needed(kernel.body, sources, stop=done):
            w(body.statement(op))
        explained = False
        for op in reds:
            if op.out in partners:
                continue  # updated together with its partner below
            if op.out in pairs:
                extras = {f"acc_{var(n)}": shortcuts.code(e.terms, body.arg) for n, e in mine.items()
                          if e.pair == op.out}
                _paired_update(w, lay, op, pairs[op.out], accs, body, extras, explain=not explained)
                explained = True
            else:
                w(lay.acc_update(op.op, accs[op.out], body.arg(op.args[0])))
        w.dedent()
        for op in reds:
            if op.out in partners:
                continue
            if op.out in pairs:
                extras = [f"acc_{var(n)}" for n, e in mine.items() if e.pair == op.out]
                _paired_final(w, lay, op, pairs[op.out], accs, extras)
                done.add(pairs[op.out][1])
            else:
                w(f"{var(op.out)} = {lay.acc_final(op, accs[op.out])}")
            body.types[op.out] = "f"
            done.add(op.out)
        settle(stage)
    full = full_size_outputs(kernel, varies)
    if full and lay.groups:
        _by_channel_last_pass(w, kernel, lay, body, full, done)
    elif full:
        _last_pass(w, kernel, lay, body, full, done)
    for out in kernel.outputs:
        if not varies.get(out.src):
            _store(w, lay, out)


def _write_outputs(w: Writer, kernel: Kernel, lay: Layout, body: BodyEmitter, full: list,
                   done: set[str]) -> None:
    for op in needed(kernel.body, [o.src for o in full], stop=done):
        w(body.statement(op))
    for out in full:
        _store(w, lay, out)


def _last_pass(w: Writer, kernel: Kernel, lay: Layout, body: BodyEmitter, full: list, done: set[str]) -> None:
    w("# last pass: compute and write the full-size outputs")
    w(f"for start in range(0, {lay.red_size}, {lay.block}):")
    w.indent()
    lay.index(w, "start")
    _write_outputs(w, kernel, lay, body, full, done)
    w.dedent()


def full_size_outputs(kernel: Kernel, varies: dict[str, bool]) -> list:
    """Outputs that vary along the reduced dims: written element by element, in the last pass."""
    return [o for o in kernel.outputs if varies.get(o.src)]


def writes_by_channel(kernel: Kernel, lay: Layout) -> bool:
    """A GroupNorm kernel with full-size outputs: its looped write pass can walk channel by channel."""
    return bool(lay.groups) and bool(full_size_outputs(kernel, _analyse(kernel, lay)[0]))


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


def _paired_update(w: Writer, lay: Layout, op: Op, pair: tuple[str, str, str], accs: dict[str, str],
                   body: BodyEmitter, extras: dict[str, str], explain: bool) -> None:
    kind, first, source = pair
    if kind == "online" and lay.grouped:
        _online_groups(w, lay, first, op.out, body.arg(source), accs, extras, explain)
    elif kind == "online":
        _online_lanes(w, lay, first, op.out, body.arg(source), accs, extras, explain)
    else:
        _welford_chunk(w, lay, first, op.out, body.arg(source), accs)


def _online_lanes(w: Writer, lay: Layout, m: str, s: str, value: str, accs: dict[str, str],
                  extras: dict[str, str], explain: bool) -> None:
    """Running max m and sum s of exp(value - m), kept per lane: one exp per element and no
    cross-lane reduction until the row ends. The loop is instruction-bound on 16-bit rows
    (cross_entropy_smooth_bf16, hand probes on an H200: 1.17 ms with a max and a sum per chunk of
    2048, 1.03 per lane, 0.67 per lane with the target logit loaded rather than compared for).
    `extras` are softmax-weighted sums (accumulator -> the value it sums), rescaled with s."""
    acc_m, acc_s = accs[m], accs[s]
    m, s = var(m), var(s)
    x, d, e, grow = f"lane_{m}", f"d_{m}", f"e_{m}", f"grow_{m}"
    w(f'{x} = tl.where({lay.red_mask}, {value}, float("-inf"))')
    if explain:
        w("# online softmax per lane: e = exp(-|d|) scales whichever of the new value and the running")
        w("# sum is not the new max; the -3.0e38 floor keeps d off -inf - -inf (NaN) while a lane has")
        w("# seen only -inf")
    w(f"{d} = {x} - tl.maximum({acc_m}, -3.0e38)")
    w(f"{e} = {pw.exp(f'-tl.abs({d})')}")
    w(f"{grow} = {d} > 0.0")
    w(f"{acc_s} = tl.where({grow}, {acc_s} * {e} + 1.0, {acc_s} + {e})")
    for acc, term in extras.items():
        t = f"t_{acc.removeprefix('acc_')}"
        w(f"{t} = tl.where({lay.red_mask}, {term}, 0.0)")
        w(f"{acc} = tl.where({grow}, {acc} * {e} + {t}, {acc} + {e} * {t})")
    w(f"{acc_m} = tl.maximum({acc_m}, {x})")


def _online_groups(w: Writer, lay: Layout, m: str, s: str, value: str, accs: dict[str, str],
                   extras: dict[str, str], explain: bool) -> None:
    """Running max m and sum s of exp(value - m) per group of LANE_GROUP neighbours (one thread's
    registers): the group's max rescales s once, each value costs a max, an FFMA, an ex2 and an
    add. `extras` are softmax-weighted sums (accumulator -> the value it sums), rescaled with s."""
    acc_m, acc_s = accs[m], accs[s]
    m, s = var(m), var(s)
    x, new, shift, e, alpha = f"lane_{m}", f"new_{m}", f"log2_shift_{m}", f"e_{m}", f"alpha_{m}"
    w(f'{x} = tl.where({lay.red_mask}, {value}, float("-inf"))')
    w(f"{new} = tl.maximum({acc_m}, tl.max({x}, axis=1))")
    if explain:
        w("# online softmax per group of neighbours, in base 2 (x * log2(e) - shift is one FFMA); a group")
        w("# that has seen only -inf shifts by 0, so exp2 never meets -inf - -inf (NaN)")
    w(f'{shift} = tl.where({new} == float("-inf"), 0.0, {new} * {pw.LOG2E})')
    w(f"{e} = tl.exp2({x} * {pw.LOG2E} - {shift}[:, None])")
    w(f"{alpha} = tl.exp2({acc_m} * {pw.LOG2E} - {shift})")
    w(f"{acc_s} = {acc_s} * {alpha} + tl.sum({e}, axis=1)")
    for acc, term in extras.items():
        t = f"t_{acc.removeprefix('acc_')}"
        w(f"{t} = tl.where({lay.red_mask}, {term}, 0.0)")
        w(f"{acc} = {acc} * {alpha} + tl.sum({e} * {t}, axis=1)")
    w(f"{acc_m} = {new}")


def _welford_chunk(w: Writer, lay: Layout, mu: str, v: str, value: str, accs: dict[str, str]) -> None:
    """Running mean mu and M2 (in v's accumulator), merged with one chunk's count, mean and M2 (Chan)."""
    mask, keep = lay.red_mask, lay.keep
    acc_mu, acc_v, v = accs[mu], accs[v], var(v)
    count, chunk_count, chunk_mean = f"count_{v}", f"chunk_count_{v}", f"chunk_mean_{v}"
    dev, delta, weight = f"chunk_dev_{v}", f"delta_{v}", f"weight_{v}"
    w("# Welford per chunk (Chan's merge): the divisions are per chunk, none per element")
    w(f"{count} = start * 1.0  # every earlier chunk was full")
    w(f"{chunk_count} = tl.minimum({lay.red_size} - start, {lay.block}) * 1.0")
    w(f"{chunk_mean} = tl.sum(tl.where({mask}, {value}, 0.0), axis=0{keep}) / {chunk_count}")
    w(f"{dev} = tl.where({mask}, {value} - {chunk_mean}, 0.0)")
    w(f"{delta} = {chunk_mean} - {acc_mu}")
    w(f"{weight} = {chunk_count} / ({count} + {chunk_count})")
    w(f"{acc_mu} += {delta} * {weight}")
    w(f"{acc_v} += tl.sum({dev} * {dev}, axis=0{keep}) + {delta} * {delta} * {count} * {weight}")


def _paired_final(w: Writer, lay: Layout, op: Op, pair: tuple[str, str, str], accs: dict[str, str],
                  extras: list[str]) -> None:
    """Merge the lanes (online) or divide M2 by the count (Welford)."""
    kind, first, _ = pair
    if kind == "online":
        m, keep = var(first), lay.keep
        shift, scale = f"shift_{m}", f"scale_{m}"
        w(f"{m} = tl.max({accs[first]}, axis=0{keep})")
        w("# an all -inf row shifts by 0: its lanes' sums are 0 and stay 0, not NaN")
        w(f'{shift} = tl.where({m} == float("-inf"), 0.0, {m})')
        w(f"{scale} = {pw.exp(f'({accs[first]} - {shift})')}")
        w(f"{var(op.out)} = tl.sum({accs[op.out]} * {scale}, axis=0{keep})")
        for acc in extras:
            w(f"total_{acc.removeprefix('acc_')} = tl.sum({acc} * {scale}, axis=0{keep})")
        return
    w(f"{var(first)} = {accs[first]}")
    correction = op.attrs.get("correction", 0)
    divisor = f"({lay.red_size} - {correction!r})" if correction else lay.red_size
    w(f"{var(op.out)} = {accs[op.out]} / {divisor}")


# --------------------------------------------------------------------------------------------------
# launcher
# --------------------------------------------------------------------------------------------------

def _prod(x: str, a: int, b: int) -> str:
    if b - a == 1:
        return f"{x}.shape[{a}]"
    if a == b:
        return "1"
    return f"math.prod({x}.shape[{a}:{b}])"


def reduced_shape(x: str, d0: int, d1: int, rank: int, keepdim: bool) -> str:
    parts = []
    if d0 > 0:
        parts.append(f"{x}.shape[:{d0}]")
    if keepdim:
        parts.append("(1,)" if d1 - d0 == 1 else f"(1,) * {d1 - d0}")
    if d1 < rank:
        parts.append(f"{x}.shape[{d1}:]")
    return " + ".join(parts) if parts else "()"


# neighbours in one thread that share a running max in a looped online softmax: 8 bf16 values are
# one 16-byte load (cross_entropy_smooth_bf16, H200 hand probes: 0.505 ms in groups of 8, 0.510 in
# groups of 4, 0.641 per lane; chunks of 1024 at 4 warps)
LANE_GROUP = 8

# a full-size output reads its row twice unless the row stays in registers: log_softmax_vocab
# (32003 fp32 columns, H200) took 1.02 ms held in one block of 32768 (32 warps), 1.52 ms in chunks
ONE_PASS_FULL = 32768
# per-lane online softmax keeps two or more accumulators per element of a chunk: small chunks keep
# them in registers (cross_entropy_smooth_bf16, H200: 0.67 ms in chunks of 1024 at 4 warps, 0.88 ms
# in 2048, 1.00 ms in 4096 at 8 warps; kl_div_rows 0.28 / 0.34 ms in 1024 / 2048 at 4 warps)
ONLINE_CHUNK = 1024


def chunk_of(config: dict, online: bool) -> int:
    """The chunk a looped row is walked in: a `tile` step's BLOCK, or ONLINE_CHUNK for an online
    softmax until a tile step sets one (`auto_block`)."""
    return ONLINE_CHUNK if online and config.get("auto_block") else config["BLOCK"]


def row_blocks(kernel: Kernel) -> tuple[int, int]:
    """(the longest row kept in one block, the chunk a longer row is walked in). A `tile` step
    sets both to its BLOCK; until then they follow the kernel's form (`auto_block`)."""
    cfg = kernel.config
    if not cfg.get("auto_block"):
        return cfg["BLOCK"], cfg["BLOCK"]
    lay = Layout(kernel)
    varies, _, _ = _analyse(kernel, lay)
    rows = [o for o in kernel.operands if not o.scalar and set(o.dims) & set(lay.red_dims)]
    full = bool(full_size_outputs(kernel, varies))
    one_pass = ONE_PASS_FULL if full and len(rows) == 1 and not lay.groups else cfg["BLOCK"]
    chunk = chunk_of(cfg, lay.online)
    return max(one_pass, chunk), chunk


def emit_launcher(w: Writer, kernel: Kernel, name: str, launcher: Launcher) -> None:
    lay = Layout(kernel)
    x = kernel.space["input"]
    cfg = kernel.config
    launcher.begin(w)
    w.indent()
    launcher.contiguous(w)
    device = launcher.device()
    for out in kernel.outputs:
        shape = f"{x}.shape" if out.dims == list(range(lay.rank)) else \
            reduced_shape(x, lay.d0, lay.d1, lay.rank, out.keepdim)
        w(f"{out.value} = {output_alloc(shape, out.dtype, device)}")
    args = [o.value for o in kernel.operands] + [o.value for o in kernel.outputs]
    if cfg.get("split_k", 1) > 1:
        _launch_split(w, kernel, name, lay, device)
    elif lay.column:
        w(f"n_outer = {_prod(x, 0, lay.d0)}")
        w(f"n_red = {_prod(x, lay.d0, lay.d1)}")
        w(f"n_inner = {_prod(x, lay.d1, lay.rank)}")
        w(f"BLOCK_M = min(triton.next_power_of_2(n_red), {cfg['BLOCK_M']})")
        launch = args + _build(kernel, 1)[2]
        if cfg.get("autotune"):
            w("grid = lambda meta: (n_outer * triton.cdiv(n_inner, meta['BLOCK_N']),)")
            w(f"{name}[grid]({', '.join(launch + ['BLOCK_M=BLOCK_M', 'ONE_PASS=n_red <= BLOCK_M'])})")
        else:
            w(f"grid = (n_outer * triton.cdiv(n_inner, {cfg['BLOCK_N']}),)")
            kw = ["BLOCK_M=BLOCK_M", f"BLOCK_N={cfg['BLOCK_N']}", "ONE_PASS=n_red <= BLOCK_M",
                  f"num_warps={cfg['num_warps']}"]
            for line in _call(w, f"{name}[grid]", launch + kw):
                w(line)
    else:
        if lay.groups:
            w(f"G = {lay.groups}")
            w(f"CPG = {x}.shape[1] // G")
            w(f"HW = {_prod(x, 2, lay.rank)}")
            w(f"n_rows = {x}.shape[0] * G")
            w("n_cols = CPG * HW")
        else:
            w(f"n_rows = {_prod(x, 0, lay.d0)}")
            w(f"n_cols = {_prod(x, lay.d0, lay.d1)}")
        one_pass, chunk = row_blocks(kernel)
        if one_pass > chunk:
            w(f"# a row of up to {one_pass} values stays in registers and is read once; "
              f"a longer one is walked in chunks")
            w(f"BLOCK = triton.next_power_of_2(n_cols) if n_cols <= {one_pass} else {chunk}")
        else:
            w(f"BLOCK = min(triton.next_power_of_2(n_cols), {chunk})")
        launch = args + _build(kernel, 1)[2]
        kw = ["BLOCK=BLOCK", "ONE_PASS=n_cols <= BLOCK"]
        if writes_by_channel(kernel, lay):
            kw.append("BY_CHANNEL=2 * HW >= BLOCK")  # a channel fills at least half a chunk
        if cfg.get("persistent"):
            w("grid = (min(n_rows, 2 * _num_programs(" + device + ")),)")
        else:
            w("grid = (n_rows,)")
        if not cfg.get("autotune"):
            if cfg.get("num_warps"):
                kw.append(f"num_warps={cfg['num_warps']}")
            else:
                w("# wide rows get more warps so each thread keeps a few elements in registers")
                w("num_warps = 32 if BLOCK > 16384 else min(max(BLOCK // 256, 1), 16)")
                kw.append("num_warps=num_warps")
            if cfg.get("num_stages"):
                kw.append(f"num_stages={cfg['num_stages']}")
        for line in _call(w, f"{name}[grid]", launch + kw):
            w(line)
    launcher.finish(w)
    w.dedent()
    w()


# --------------------------------------------------------------------------------------------------
# split reductions: slices of the reduced extent in parallel, then a kernel that combines them
# --------------------------------------------------------------------------------------------------

def splittable(kernel: Kernel) -> bool:
    """Every reduction in the first pass and no full-size output: partial results combine later."""
    lay = Layout(kernel)
    if lay.groups:
        return False
    varies, after, _ = _analyse(kernel, lay, pair=False)
    reds = [op for op in kernel.body if op.op in REDUCTIONS]
    return bool(reds) and all(after[op.out] == 1 for op in reds) and \
        not full_size_outputs(kernel, varies)


def _reduced_address(lay: Layout, dims: list[int], what: str) -> str:
    """Offset of an element of a reduced-shape operand, at flat reduced index `offs`."""
    outer, inner = set(range(lay.d0)), set(range(lay.d1, lay.rank))
    dims = set(dims)
    if not dims:
        return "0"
    if dims == outer | inner:
        return "offs"
    if dims == outer:
        return "offs // n_inner"
    if dims == inner:
        return "offs % n_inner"
    raise FusionError(f"{what}: a split reduction cannot address dims {sorted(dims)}")


def _combine_ops(kernel: Kernel) -> list[Op]:
    reds = {op.out for op in kernel.body if op.op in REDUCTIONS}
    return needed(kernel.body, [o.src for o in kernel.outputs], stop=reds)


def _emit_split(w: Writer, kernel: Kernel, name: str) -> tuple[list[str], list[str]]:
    """Write the partial and combine kernels; returns the size arguments each one takes."""
    lay = Layout(kernel)
    lay.check()
    varies, _, _ = _analyse(kernel, lay, pair=False)
    reds = [op for op in kernel.body if op.op in REDUCTIONS]
    body = _body(kernel, lay, varies)
    bw = Writer()
    bw.depth = w.depth + 1
    lay.program(bw)
    bw("split = tl.program_id(1)")
    bw(f"# this program reduces one slice of the {lay.red_size} reduced elements")
    bw(f"chunk = tl.cdiv(tl.cdiv({lay.red_size}, {lay.block}), SPLIT) * {lay.block}")
    bw("lo = split * chunk")
    bw(f"hi = tl.minimum(lo + chunk, {lay.red_size})")
    done: set[str] = set()
    for op in kernel.body:
        if not varies[op.out] and op.op not in REDUCTIONS and all(
                not isinstance(a, str) or a in done for a in op.args):
            bw(body.statement(op))
            done.add(op.out)
    for op in reds:
        bw(f"acc_{var(op.out)} = {lay.acc_init(op.op)}")
    bw(f"for start in range(lo, hi, {lay.block}):")
    bw.indent()
    lay.index(bw, "start", bound="hi")
    for op in needed(kernel.body, [op.args[0] for op in reds], stop=done):
        bw(body.statement(op))
    for op in reds:
        bw(lay.acc_update(op.op, f"acc_{var(op.out)}", body.arg(op.args[0])))
    bw.dedent()
    index = "outer * n_inner + inner" if lay.column else "row"
    mask = ", mask=inner_mask" if lay.column else ""
    for j, op in enumerate(reds):
        partial = f"{_COMBINE[op.op]}(acc_{var(op.out)}, axis=0{lay.keep})"
        slot = "split" if j == 0 else f"({j} * SPLIT + split)"
        bw(f"tl.store(ws_ptr + {slot} * n_reduced + {index}, {partial}{mask})")
    text = "\n".join(bw.lines)
    operands = [var(o.value) if o.scalar else ptr(o.value) for o in kernel.operands]
    sizes = [s for s in ("n_cols", "n_red", "n_inner") if re.search(rf"\b{s}\b", text)]
    kernel_header(w, kernel, name, operands + ["ws_ptr", "n_reduced"] + sizes,
                  (["BLOCK_M", "BLOCK_N"] if lay.column else ["BLOCK"]) + ["SPLIT"])
    w.lines.extend(bw.lines)
    w()
    w()
    return sizes, _emit_combine(w, kernel, name, lay, reds)


def _emit_combine(w: Writer, kernel: Kernel, name: str, lay: Layout, reds: list[Op]) -> list[str]:
    ops = _combine_ops(kernel)
    loaded = sorted({op.args[0] for op in ops if op.op == "load"})
    operands = [kernel.operands[i] for i in loaded]
    cw = Writer()
    cw.depth = w.depth + 1
    cw("offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)")
    cw("mask = offs < n_reduced")
    for j, op in enumerate(reds):
        first = "offs" if j == 0 else f"{j} * SPLIT * n_reduced + offs"
        cw(f"{var(op.out)} = tl.load(ws_ptr + {first}, mask=mask, other=0.0)")
        cw("for s in tl.static_range(1, SPLIT):")
        slot = "s" if j == 0 else f"({j} * SPLIT + s)"
        part = f"tl.load(ws_ptr + {slot} * n_reduced + offs, mask=mask, other=0.0)"
        if op.op in ("sum", "mean"):
            cw(f"    {var(op.out)} += {part}")
        else:
            fn = "tl.maximum" if op.op == "max" else "tl.minimum"
            cw(f"    {var(op.out)} = {fn}({var(op.out)}, {part})")
        if op.op == "mean":
            cw(f"{var(op.out)} = {var(op.out)}{lay._mean_divisor(op)}")

    def load(op: Op, operand) -> str:
        if operand.scalar:
            return f"{var(operand.value)} * 1.0" if not operand.integer else var(operand.value)
        where = _reduced_address(lay, operand.dims, operand.value)
        text = f"tl.load({ptr(operand.value)})" if where == "0" else \
            f"tl.load({ptr(operand.value)} + {where}, mask=mask, other=0)"
        return text if operand.integer else f"{text}.to(tl.float32)"

    body = BodyEmitter(kernel, load)
    for op in ops:
        cw(body.statement(op))
    for out in kernel.outputs:
        value = f"{var(out.src)}.to({ptr(out.value)}.dtype.element_ty)"
        cw(f"tl.store({ptr(out.value)} + offs, {value}, mask=mask)")
    text = "\n".join(cw.lines)
    sizes = [s for s in ("n_cols", "n_red", "n_inner") if re.search(rf"\b{s}\b", text)]
    params = ["ws_ptr"] + [var(o.value) if o.scalar else ptr(o.value) for o in operands] + \
        [ptr(o.value) for o in kernel.outputs] + ["n_reduced"] + sizes
    w("@triton.jit")
    for line in wrap_call(f"def {_combine_name(name)}",
                          params + ["SPLIT: tl.constexpr", "BLOCK: tl.constexpr"], ":", w.depth):
        w(line)
    w.lines.extend(cw.lines)
    w()
    return sizes


def _combine_name(name: str) -> str:
    return name.removesuffix("_kernel") + "_combine_kernel"


def _launch_split(w: Writer, kernel: Kernel, name: str, lay: Layout, device: str) -> None:
    x = kernel.space["input"]
    cfg = kernel.config
    split = cfg["split_k"]
    reds = [op for op in kernel.body if op.op in REDUCTIONS]
    if lay.column:
        w(f"n_outer = {_prod(x, 0, lay.d0)}")
        w(f"n_red = {_prod(x, lay.d0, lay.d1)}")
        w(f"n_inner = {_prod(x, lay.d1, lay.rank)}")
        w("n_reduced = n_outer * n_inner")
        w(f"BLOCK_M = min(triton.next_power_of_2(n_red), {cfg['BLOCK_M']})")
        grid = f"n_outer * triton.cdiv(n_inner, {cfg['BLOCK_N']})"
        consts = ["BLOCK_M=BLOCK_M", f"BLOCK_N={cfg['BLOCK_N']}"]
    else:
        w(f"n_reduced = {_prod(x, 0, lay.d0)}")
        w(f"n_cols = {_prod(x, lay.d0, lay.d1)}")
        w(f"BLOCK = min(triton.next_power_of_2(n_cols), {cfg['BLOCK']})")
        grid = "n_reduced"
        consts = ["BLOCK=BLOCK"]
    w(f"# {split} programs share each reduction; their partial results meet in the combine kernel")
    w(f"ws = torch.empty(({len(reds)}, {split}, n_reduced), device={device}, dtype=torch.float32)")
    sizes_a, sizes_c = _emit_split(Writer(), kernel, name)
    first = [o.value for o in kernel.operands] + ["ws", "n_reduced"] + sizes_a
    kw = consts + [f"SPLIT={split}"] + ([f"num_warps={cfg['num_warps']}"] if cfg.get("num_warps") else [])
    for line in _call(w, f"{name}[({grid}, {split})]", first + kw):
        w(line)
    ops = _combine_ops(kernel)
    loaded = sorted({op.args[0] for op in ops if op.op == "load"})
    second = ["ws"] + [kernel.operands[i].value for i in loaded] + [o.value for o in kernel.outputs] + \
        ["n_reduced"] + sizes_c
    for line in _call(w, f"{_combine_name(name)}[(triton.cdiv(n_reduced, 1024),)]",
                      second + [f"SPLIT={split}", "BLOCK=1024"]):
        w(line)


def _call(w: Writer, head: str, items: list[str]) -> list[str]:
    return wrap_call(head, items, "", w.depth)


def tuning_space(kernel: Kernel) -> list[dict]:
    cfg = kernel.config
    if Layout(kernel).column:
        current = {"BLOCK_N": cfg["BLOCK_N"], "num_warps": cfg["num_warps"]}
        menu = [current] + [{"BLOCK_N": bn, "num_warps": nw} for bn, nw in
                            ((32, 4), (64, 4), (128, 4), (128, 8), (256, 8), (512, 8))]
    else:
        current = {"num_warps": cfg.get("num_warps") or 4}
        menu = [current] + [{"num_warps": nw} for nw in (1, 2, 4, 8, 16)]
    return autotune_configs(menu, [])
