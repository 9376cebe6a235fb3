"""Reduction pairs that share one pass over a looped row (reduce_analysis.paired_reductions): an
online softmax's running max and rescaled sum, per lane or per group of neighbours, and Welford's
running mean and M2, merged per chunk."""

from __future__ import annotations

from coders.template import ops as pw
from coders.template.emit.common import BodyEmitter, Writer, var
from coders.template.emit.reduce_layout import Layout
from coders.template.ir import Op


def paired_update(w: Writer, lay: Layout, op: Op, pair: tuple[str, str, str], accs: dict[str, str],
                  body: BodyEmitter, extras: dict[str, str], explain: bool) -> None:
    """One chunk's update of the pair `pair` (kind, first reduction, the value both walk) ending in `op`."""
    kind, first, source = pair
    if kind == "online" and lay.grouped:
        _online_groups(w, lay, first, op.out, body.arg(source), accs, extras, explain)
    elif kind == "online":
        _online_lanes(w, lay, first, op.out, body.arg(source), accs, extras, explain)
    else:
        welford_chunk(w, lay, first, op.out, body.arg(source), accs)


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


def welford_chunk(w: Writer, lay: Layout, mu: str, v: str, value: str, accs: dict[str, str],
                  span: tuple[str, str] | None = None) -> None:
    """Running mean mu and M2 (in v's accumulator), merged with one chunk's count, mean and M2 (Chan).
    `span`: the (first, end) of a slice of the row the walk covers (a split norm's statistics
    kernel, reduce_norm_split.py); the whole row by default."""
    mask, keep = lay.red_mask, lay.keep
    acc_mu, acc_v, v = accs[mu], accs[v], var(v)
    count, chunk_count, chunk_mean = f"count_{v}", f"chunk_count_{v}", f"chunk_mean_{v}"
    dev, delta, weight = f"chunk_dev_{v}", f"delta_{v}", f"weight_{v}"
    w("# Welford per chunk (Chan's merge): the divisions are per chunk, none per element")
    if span:
        w(f"{count} = (start - {span[0]}) * 1.0  # every earlier chunk of the slice was full")
    else:
        w(f"{count} = start * 1.0  # every earlier chunk was full")
    end = span[1] if span else lay.red_size
    w(f"{chunk_count} = tl.minimum({end} - start, {lay.block}) * 1.0")
    w(f"{chunk_mean} = tl.sum(tl.where({mask}, {value}, 0.0), axis=0{keep}) / {chunk_count}")
    w(f"{dev} = tl.where({mask}, {value} - {chunk_mean}, 0.0)")
    w(f"{delta} = {chunk_mean} - {acc_mu}")
    w(f"{weight} = {chunk_count} / ({count} + {chunk_count})")
    w(f"{acc_mu} += {delta} * {weight}")
    w(f"{acc_v} += tl.sum({dev} * {dev}, axis=0{keep}) + {delta} * {delta} * {count} * {weight}")


def paired_final(w: Writer, lay: Layout, op: Op, pair: tuple[str, str, str], accs: dict[str, str],
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
