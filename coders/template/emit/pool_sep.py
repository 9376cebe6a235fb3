"""The slide's separated taps (config `sep`; a probe key of the 2026-11-30 pool probe,
benchmarks/probes/2026-11-30-pool, and the port's on 43's window only: pool_forms.sep_in_port, 54.2 ->
93.1% of the memory floor on an H200): the window's depth and row taps over whole input
rows first, its last-dim taps once per output row, through an in-register gather (emit/pool.py
dispatches here; the slide's queue and stores are emit/pool_slide.py's).

Why: 43_Max_Pooling_3D (k3 s2 p1 d3, rows of 128 -> 62) sits at 55-69% of the memory floor in the
shift (pool_shift.py). There each thread's group of 2 outputs reads input columns -1, 1, 2, 4, 5, 7 of
its first column: 3 chunks, of which ptxas loads only those lanes (48 LDG.128 + 144 scalar in the
whole kernel), for every input row of each of the 3 depth planes: a warp's 512 bytes of a row cost
about 3 load instructions of 4 cache lines each, 12-16 L1 wavefronts for 4 lines of data, and each
plane's row is read by 1.5 programs (the depth taps of od and od + 3 meet). max and sum fold
separately along each dim, so here a program (one plane, one output depth, one band of output rows)
loads each needed input row of its depth taps whole and contiguous (4 columns a thread: one 128-bit
load each, every lane used, 4 wavefronts per 512 bytes), folds the depth taps (the "row result"), keeps
the row results its windows share in the slide's queue (one per input row, BLOCK_N x ST columns
wide), folds the queue's rows of an output row's window, and only then takes the last dim's taps:
output column j gathers columns j * ST - PD + k * DL of that folded row (tl.gather: lanes of one warp
exchange registers, no shared memory where the row is one warp's). The last-dim taps cost a gather per
tap per output row instead of loads per input row and depth tap.

With `sep_gather` (G, a power of two; a probe key, off in every port) an output row's last-dim taps
go G at a time through one tl.gather ([BLOCK_N x G] indices, split back into the taps in order):
at 4 warps a gather crosses shared memory (an STS and 2 bar.sync each), and the per-tap masks
held 16 of 42's 80 registers; 42's sep at 4 warps goes 80 -> 48 registers, 464 -> 328 SASS.

SEP (the launcher's) is on where the slide is (SLIDE), the output row fits one strip (BLOCK_N) and
the input row BLOCK_N x ST columns (ST the run-time stride along the row, a power of two); else the
slide's own path runs. Padding is dropped after the prologue, as in every form: a masked element is
-inf (max) or 0 (sum). Preconditions (`sep_ok`): the slide above 1-D, no vector taps, no shift, no
stack, window loads of whole-rank operands only (a row's elements are positions of the input).
"""

from __future__ import annotations

from coders.template.emit import pool_slide
from coders.template.emit.common import BodyEmitter, Writer
from coders.template.emit.pool_forms import is_slide, is_vector
from coders.template.emit.pool_regions import NAN_MAX, Regions
from coders.template.emit.pool_rows import (
    _input_row,
    _loader,
    _output_row,
    _prologue_once,
    _wide_outer,
    depth_index,
)
from coders.template.ir import Kernel

COLS = "(BLOCK_N * ST{})"  # the input columns of a row result: the strip's outputs x the stride


def is_sep(kernel: Kernel) -> bool:
    return is_slide(kernel) and bool(kernel.config.get("sep")) and sep_ok(kernel)


def sep_ok(kernel: Kernel) -> bool:
    cfg = kernel.config
    if kernel.space["nd"] < 2 or is_vector(kernel) or cfg.get("shift") or cfg.get("stack"):
        return False
    regions = Regions(kernel)
    full = list(range(regions.rank))
    return all(kernel.operands[op.args[0]].dims == full for op in regions.per_tap if op.op == "load")


def launch_flag(kernel: Kernel) -> str:
    """The launcher's SEP: the slide is on, one strip holds the output row and BLOCK_N x ST columns
    the input row (ST a power of two: the row's arange)."""
    n = int(kernel.config["BLOCK_N"])
    return (f"SEP=bool(_slide) and _out[-1] <= {n} and _in[-1] <= {n} * _s[-1] and "
            "_s[-1] & (_s[-1] - 1) == 0")


def emit_body(w: Writer, kernel: Kernel, regions: Regions) -> None:
    """The kernel's body: the separated taps where SEP, else the slide's."""
    w("if SEP:")
    w.indent()
    _sep_body(w, kernel, regions)
    w.dedent()
    w("else:")
    w.indent()
    pool_slide.emit_body(w, kernel, regions)
    w.dedent()


def _sep_body(w: Writer, kernel: Kernel, regions: Regions) -> None:
    region = ["hoist"]
    body = BodyEmitter(kernel, _loader(regions, region))
    nd, r, last = regions.nd, regions.nd - 2, regions.nd - 1
    cols = COLS.format(last)
    w("pid = tl.program_id(0)")
    w(f"plane_bands = tl.cdiv(OUT{r}, BAND)")
    w("plane_first = pid % plane_bands * BAND")
    w(f"plane_end = tl.minimum(plane_first + BAND, OUT{r})")
    w("outer = pid // plane_bands")
    if nd == 3:
        depth_index(w)
    _wide_outer(w)
    w(f"plane_in = {' * '.join(f'IN{j}' for j in range(nd))}")
    w(f"plane_out = {' * '.join(f'OUT{j}' for j in range(nd))}")
    w(f"plane_cols = tl.arange(0, {cols})  # the input row's columns, 4 consecutive a thread")
    w(f"plane_cm = plane_cols < IN{last}")
    w(f"oi{last} = tl.arange(0, BLOCK_N)")
    w(f"plane_mask = oi{last} < OUT{last}")
    w(f"lo{last} = oi{last} * ST{last} - PD{last}")
    _prologue_once(w, regions, body, region)
    _slide(w, kernel, regions, body, region)


def _row(w: Writer, kernel: Kernel, regions: Regions, body: BodyEmitter, region: list) -> None:
    """win_row: input row wi{r}'s depth taps (3-D) folded at every column of the row, masked where
    the row, the depth or the column lies outside the input."""
    nd, r, last, max_pool = regions.nd, regions.nd - 2, regions.nd - 1, regions.kind == "max"
    pad = "float(\"-inf\")" if max_pool else "0.0"
    w(f"win_row = tl.full([{COLS.format(last)}], {pad}, tl.float32)")
    rows_ok = [f"(wi{r} >= 0) & (wi{r} < IN{r})"]
    if nd == 3:
        dl = " * DL0" if max_pool else ""
        w("for kk0 in tl.static_range(KS0):")
        w.indent()
        w(f"wi0 = lo0 + kk0{dl}")
        rows_ok.append("(wi0 >= 0) & (wi0 < IN0)")
    w(f"wi{last} = plane_cols")
    # the row (and depth) test is one number: a select, not `scalar & block` (pool_rows' reason)
    w(f"win_valid = tl.where({' & '.join(rows_ok)}, plane_cm, False)")
    w("win_pos = " + {2: "wi0 * IN1 + wi1", 3: "(wi0 * IN1 + wi1) * IN2 + wi2"}[nd])
    region[0] = "win"
    for op in regions.per_tap:
        w(body.statement(op))
    value = body.arg(regions.pool.args[0])
    w(f"win_val = tl.where(win_valid, {value}, {pad})")
    w(f"win_row = {NAN_MAX.format('win_row', 'win_val')}" if max_pool else "win_row += win_val")
    if nd == 3:
        w.dedent()


def _slide(w: Writer, kernel: Kernel, regions: Regions, body: BodyEmitter, region: list) -> None:
    """The band's output rows, STEP a step, the row results its windows share in the queue (as
    pool_slide's); each output row's window of rows, then its last-dim taps; the stores after the
    step's loads."""
    r, max_pool, queue = regions.nd - 2, regions.kind == "max", pool_slide.queue_slots(kernel)
    init = "float(\"-inf\")" if max_pool else "0.0"
    dl = f" * DL{r}" if max_pool else ""
    span = f"((KS{r} - 1){dl} + 1)"
    step = int(kernel.config["slide"])
    for q in range(queue):
        w(f"win_q{q} = tl.full([{COLS.format(regions.nd - 1)}], {init}, tl.float32)")
    w(f"for win_k in tl.static_range({span} - ST{r}):")
    w.indent()
    _input_row(w, r, f"wi{r} = plane_first * ST{r} - PD{r} + win_k")
    _row(w, kernel, regions, body, region)
    pool_slide._push(w, queue)
    w.dedent()
    w("for plane_step in range(plane_first, plane_end, STEP):")
    w.indent()
    for u in range(step):
        pool_slide._output_position(w, r, u)
        w(f"for win_s in tl.static_range(ST{r}):")
        w.indent()
        _input_row(w, r, f"wi{r} = lo{r} + {span} - ST{r} + win_s")
        _row(w, kernel, regions, body, region)
        pool_slide._push(w, queue)
        w.dedent()
        pool_slide._queue_window(w, r, max_pool, queue, span)
        _last_taps(w, regions, int(kernel.config.get("sep_gather") or 0))
        w(f"win_out{u} = win_acc")
    for u in range(step):
        pool_slide._output_position(w, r, u)
        w(f"win_acc = win_out{u}")
        _output_row(w, kernel, regions, body, region)
    w.dedent()


def _last_taps(w: Writer, regions: Regions, gather: int) -> None:
    """win_acc: output column j's fold of the folded row's columns j * ST - PD + k * DL (in
    registers: tl.gather), masked outside the input row; `gather` taps a tl.gather where set."""
    if gather:
        _gathered_taps(w, regions, gather)
        return
    last, max_pool = regions.nd - 1, regions.kind == "max"
    dl = f" * DL{last}" if max_pool else ""
    pad = "float(\"-inf\")" if max_pool else "0.0"
    w("win_sep = win_acc")
    w(f"win_acc = tl.full([BLOCK_N], {pad}, tl.float32)")
    w(f"for kk{last} in tl.static_range(KS{last}):")
    w.indent()
    w(f"win_si = lo{last} + kk{last}{dl}")
    w(f"win_sok = (win_si >= 0) & (win_si < IN{last})")
    w(f"win_sv = tl.gather(win_sep, tl.minimum(tl.maximum(win_si, 0), {COLS.format(last)} - 1), 0)")
    w(f"win_sv = tl.where(win_sok, win_sv, {pad})")
    w(f"win_acc = {NAN_MAX.format('win_acc', 'win_sv')}" if max_pool else "win_acc += win_sv")
    w.dedent()


def _gathered_taps(w: Writer, regions: Regions, taps: int) -> None:
    """_last_taps with `taps` (a power of two, config `sep_gather`) last-dim taps a tl.gather: one
    [BLOCK_N x taps] index, split into the taps in order and folded as there (the same max, the same
    sum order). Why: at 4 warps each gather goes through shared memory, an STS and 2 bar.sync a
    gather; 42's 4 taps at once are 1 and 2 (Triton 3.6, sm_90). A tap past KS is gathered (its
    clamped index is valid) but not folded. Max pooling at DL 1 needs no masks: a tap the clamp
    moves lands on column 0 or the row's last, both inside its window (PyTorch's padding is at most
    half the window, and a window starts inside the input), and columns past the input are -inf."""
    last, max_pool = regions.nd - 1, regions.kind == "max"
    cols, levels = COLS.format(last), taps.bit_length() - 1
    pad = "float(\"-inf\")" if max_pool else "0.0"
    w("win_sep = win_acc")
    w(f"win_acc = tl.full([BLOCK_N], {pad}, tl.float32)")
    w(f"for kk{last} in tl.static_range(0, KS{last}, {taps}):")
    w.indent()
    step = f"(kk{last} + tl.arange(0, {taps})[None, :])" + (f" * DL{last}" if max_pool else "")
    w(f"win_si = lo{last}[:, None] + {step}")
    w(f"win_sv = tl.gather(win_sep, tl.reshape(tl.minimum(tl.maximum(win_si, 0), {cols} - 1), "
      f"[BLOCK_N * {taps}]), 0)")
    w(f"win_sv = tl.reshape(win_sv, [BLOCK_N, {taps}])")
    if max_pool:
        w(f"if DL{last} != 1:")
        w.indent()
    w(f"win_sv = tl.where((win_si >= 0) & (win_si < IN{last}), win_sv, {pad})")
    if max_pool:
        w.dedent()
    w(f"win_sv = tl.reshape(win_sv, [BLOCK_N{', 2' * levels}])")
    names = ["win_sv"]
    for _ in range(levels):  # tl.split halves the last axis: the taps' lowest index bit first
        for name in names:
            w(f"{name}0, {name}1 = tl.split({name})")
        names = [f"{name}{bit}" for bit in "01" for name in names]
    for k in range(taps):  # names[k] is tap k: its suffix is k's bits, lowest first
        w(f"if kk{last} + {k} < KS{last}:")
        fold = NAN_MAX.format("win_acc", names[k]) if max_pool else f"win_acc + {names[k]}"
        w(f"    win_acc = {fold}")
    w.dedent()
