"""Split row normalizations (the menu's `split_k` on a LayerNorm, an RMSNorm, x / norm(x): statistics
of the row in one pass, then a full-size output from them): SPLIT programs share each row.

- a statistics kernel over (rows, SPLIT): each program walks one slice of its row and writes the
  slice's partials to a float32 workspace: a Welford pair's mean and M2 (merged chunk by chunk as
  the looped row form does, reduce_pairs.welford_chunk), a plain reduction's sum, max or min;
- a normalize kernel over (rows, SPLIT): each program merges its row's SPLIT partials (a mean and M2
  by Chan's parallel form: the row's mean from the slices' counts and means, then M2 as the sum of
  the slices' M2 and count * (mean_i - mean)^2), computes the row's scalars (rstd) and writes its
  slice of the full-size outputs (the affine fused), walking the slice's chunks backwards: the
  chunks the statistics kernel read last, the likeliest still in L2, come first.

A split row reduction with no full-size outputs takes reduce_split.py's partial and combine kernels
instead; reduce_launch.launch_norm_split launches these two.
"""

from __future__ import annotations

from coders.template.emit.common import (
    COMBINE,
    IDENTITY,
    REDUCTIONS,
    Writer,
    mean_divisor,
    needed,
    ptr,
    var,
)
from coders.template.emit.launch import kernel_header
from coders.template.emit.reduce_analysis import analyse, full_size_outputs, paired_reductions
from coders.template.emit.reduce_body import body_of, store
from coders.template.emit.reduce_layout import Layout
from coders.template.emit.reduce_pairs import welford_chunk
from coders.template.ir import Kernel, Op


def norm_splittable(kernel: Kernel) -> bool:
    """A row kernel whose reductions all finish in the first pass over the row (a Welford pair's
    variance counts as first: it shares its mean's pass) and whose outputs are all full-size."""
    if kernel.kind != "reduce":
        return False
    lay = Layout(kernel)
    if lay.column or lay.groups or lay.tail is not None or \
            any(lay.spreads(o.dims) for o in kernel.operands if not o.scalar):
        return False  # its kernels take n_rows and n_cols only
    varies, after, found = analyse(kernel, lay)
    reds = [op for op in kernel.body if op.op in REDUCTIONS]
    welford = all(kind == "welford" for kind, _, _ in paired_reductions(kernel).values())
    return bool(reds) and welford and not found and all(after[op.out] == 1 for op in reds) and \
        bool(kernel.outputs) and len(full_size_outputs(kernel, varies)) == len(kernel.outputs)


def statistics(kernel: Kernel) -> list[tuple[Op, str | None, int]]:
    """The partials a slice writes: (reduction, its Welford partner's mean or None, first workspace
    slot). A Welford pair takes two slots (mean, M2) under its second reduction; its mean has none."""
    pairs = paired_reductions(kernel)
    firsts = {first for _, first, _ in pairs.values()}
    found, slot = [], 0
    for op in kernel.body:
        if op.op not in REDUCTIONS or op.out in firsts:
            continue
        partner = pairs[op.out][1] if op.out in pairs else None
        found.append((op, partner, slot))
        slot += 2 if partner else 1
    return found


def workspace_slots(kernel: Kernel) -> int:
    """The float32 partials a slice of a row writes (the workspace is [slots, SPLIT, rows])."""
    return sum(2 if partner else 1 for _, partner, _ in statistics(kernel))


def stats_name(name: str) -> str:
    return name.removesuffix("_kernel") + "_stats_kernel"


def _slice(w: Writer) -> None:
    """The program's row and its slice [lo, hi) of the row's chunks (empty past the row's end)."""
    w("row = tl.program_id(0).to(tl.int64)")
    w("split = tl.program_id(1)")
    w("# this program's slice of the row: whole chunks, the last slices possibly short or empty")
    w("chunk = tl.cdiv(tl.cdiv(n_cols, BLOCK), SPLIT) * BLOCK")
    w("lo = tl.minimum(split * chunk, n_cols)")
    w("hi = tl.minimum(lo + chunk, n_cols)")


def _slot(j: int, index: str) -> str:
    return f"ws_ptr + ({j} * SPLIT + {index}) * n_rows + row" if j else f"ws_ptr + {index} * n_rows + row"


def emit_norm_split(w: Writer, kernel: Kernel, name: str) -> None:
    """Write the statistics and normalize kernels."""
    lay = Layout(kernel)
    lay.check()
    _stats_kernel(w, kernel, name, lay)
    _normalize_kernel(w, kernel, name, lay)


def stats_operands(kernel: Kernel) -> list[int]:
    """The operands the statistics kernel reads: those the reduced values are computed from."""
    pairs = paired_reductions(kernel)
    sources = [pairs[op.out][2] if partner else op.args[0] for op, partner, _ in statistics(kernel)]
    return sorted({op.args[0] for op in needed(kernel.body, sources) if op.op == "load"})


def _stats_kernel(w: Writer, kernel: Kernel, name: str, lay: Layout) -> None:
    varies, _, _ = analyse(kernel, lay)
    body = body_of(kernel, lay, varies)
    stats = statistics(kernel)
    pairs = paired_reductions(kernel)
    sources = [pairs[op.out][2] if partner else op.args[0] for op, partner, _ in stats]
    operands = [kernel.operands[i] for i in stats_operands(kernel)]
    kernel_header(w, kernel, stats_name(name),
                  [var(o.value) if o.scalar else ptr(o.value) for o in operands] +
                  ["ws_ptr", "n_rows", "n_cols"], ["BLOCK", "SPLIT"])
    w.indent()
    _slice(w)
    done: set[str] = set()
    for op in needed(kernel.body, sources):  # per-row values the walk reads, before it
        if not varies[op.out]:
            w(body.statement(op))
            done.add(op.out)
    accs: dict[str, str] = {}
    for op, partner, _ in stats:
        if partner:  # Welford: one running mean and M2 per slice, merged chunk by chunk
            accs[partner], accs[op.out] = f"acc_{var(partner)}", f"acc_{var(op.out)}"
            w(f"{accs[partner]} = tl.full([], 0.0, tl.float32)")
            w(f"{accs[op.out]} = tl.full([], 0.0, tl.float32)")
        else:
            accs[op.out] = f"acc_{var(op.out)}"
            w(f"{accs[op.out]} = {lay.acc_init(op.op)}")
    w("for start in range(lo, hi, BLOCK):")
    w.indent()
    lay.index(w, "start", bound="hi")
    for op in needed(kernel.body, sources, stop=done):
        w(body.statement(op))
    for op, partner, _ in stats:
        if partner:
            welford_chunk(w, lay, partner, op.out, body.arg(pairs[op.out][2]), accs, span=("lo", "hi"))
        else:
            w(lay.acc_update(op.op, accs[op.out], body.arg(op.args[0])))
    w.dedent()
    w("# the slice's partials (an empty slice writes a count-0 mean of 0 and the identities)")
    for op, partner, j in stats:
        if partner:
            w(f"tl.store({_slot(j, 'split')}, {accs[partner]})")
            w(f"tl.store({_slot(j + 1, 'split')}, {accs[op.out]})")
        else:
            w(f"tl.store({_slot(j, 'split')}, {COMBINE[op.op]}({accs[op.out]}, axis=0))")
    w.dedent()
    w()
    w()


def _settle(w: Writer, kernel: Kernel, body, varies: dict[str, bool], after: dict[str, int], stage: int,
            done: set[str]) -> set[str]:
    """The per-row scalars known after `stage` passes that are not reductions (rstd after its var)."""
    for op in kernel.body:
        if not varies[op.out] and op.op not in REDUCTIONS and after[op.out] <= stage and op.out not in done:
            w(body.statement(op))
            done.add(op.out)
    return done


def _normalize_kernel(w: Writer, kernel: Kernel, name: str, lay: Layout) -> None:
    varies, after, _ = analyse(kernel, lay)
    body = body_of(kernel, lay, varies)
    kernel_header(w, kernel, name,
                  [var(o.value) if o.scalar else ptr(o.value) for o in kernel.operands] +
                  [ptr(o.value) for o in kernel.outputs] + ["ws_ptr", "n_rows", "n_cols"],
                  ["BLOCK", "SPLIT", "SLICES"])
    w.indent()
    _slice(w)
    done = _settle(w, kernel, body, varies, after, 0, set())
    _merge_partials(w, kernel)
    for op, partner, _ in statistics(kernel):
        body.types[op.out] = "f"
        done.add(op.out)
        if partner:
            body.types[partner] = "f"
            done.add(partner)
    done = _settle(w, kernel, body, varies, after, 1, done)
    full = full_size_outputs(kernel, varies)
    w("# the slice's outputs, its chunks walked backwards: the statistics kernel read the last ones last")
    w("n_chunks = tl.cdiv(hi - lo, BLOCK)")
    w("for back in range(0, n_chunks):")
    w.indent()
    lay.index(w, "lo + (n_chunks - 1 - back) * BLOCK", bound="hi")
    for op in needed(kernel.body, [o.src for o in full], stop=done):
        w(body.statement(op))
    for out in full:
        store(w, lay, out)
    w.dedent()
    w.dedent()
    w()


def _merge_partials(w: Writer, kernel: Kernel) -> None:
    """The row's reductions from its SPLIT slices' partials, one [SLICES] load each."""
    stats = statistics(kernel)
    welford = any(partner for _, partner, _ in stats)
    w("# the row's statistics from its slices' partials" +
      (" (Chan's parallel merge for a mean and M2)" if welford else ""))
    w("sl = tl.arange(0, SLICES)")
    w("sl_mask = sl < SPLIT")
    if welford:  # each slice's count of values: its mean's weight
        w("sl_count = (tl.minimum(sl * chunk + chunk, n_cols) - tl.minimum(sl * chunk, n_cols)) * 1.0")
    for op, partner, j in stats:
        out = var(op.out)
        if partner:
            mu = var(partner)
            w(f"part_{mu} = tl.load({_slot(j, 'sl')}, mask=sl_mask, other=0.0)")
            w(f"part_{out} = tl.load({_slot(j + 1, 'sl')}, mask=sl_mask, other=0.0)")
            w(f"{mu} = tl.sum(sl_count * part_{mu}, axis=0) / n_cols")
            w(f"dev_{out} = part_{mu} - {mu}")
            m2 = f"tl.sum(part_{out} + sl_count * dev_{out} * dev_{out}, axis=0)"
            w(f"{out} = {m2}{mean_divisor(op, 'n_cols')}")
        else:
            part = f"tl.load({_slot(j, 'sl')}, mask=sl_mask, other={IDENTITY[op.op]})"
            w(f"{out} = {COMBINE[op.op]}({part}, axis=0){mean_divisor(op, 'n_cols')}")
