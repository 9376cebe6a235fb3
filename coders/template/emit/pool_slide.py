"""The rows form's slide (config `slide` = STEP, output rows per loop step; emit/pool.py dispatches
here; the rows form's other pieces are emit/pool_rows.py's). The port slides 2 rows a step in strips
of up to 128 columns where undilated 2-D and 3-D windows share rows (pool_forms.slide_in_port: on an
H100, 2026-11-27, benchmarks/probes/2026-11-27-pool, KernelBench 42 ran 1.8x and 46 1.3x the ring).
Where the port takes the shifted taps (pool_forms.shift_in_port) they bring their own slide and strip:
42 slides 2 rows a step in one strip of 512 (89.4% of the floor, against 42.6% at 128 with plain
taps; 2026-11-28-pool, h100-shift.log), 43's dilated window 2 rows a step in a strip of 64.

Why: compiled for sm_90 (Triton 3.9 on the CPU), the rows form's ring, a [RING, BLOCK_N] tensor,
takes a layout of its own (one column per thread) while the strip's rows have theirs, so every
input row's result and every output row's max or sum cross shared memory behind a barrier (42:
three layout conversions per output row); its slot is `row % RING`, a run-time number, so each
update and each window is RING selects per column; and each program has one input row's loads in
flight at a time (the next row's loads wait for this row's store), 2 KB per program on 42.

Here the rows that windows share are a queue of QUEUE 1-D tensors in the strip's layout
(`win_q0` oldest .. `win_q{QUEUE-1}` newest; QUEUE is the traced window's span of rows, so the
program text is fixed): each input row's result is pushed once (a shift of names, no selects), and
an output row reduces the queue's slots of its window, which the constexprs KS, DL (and the span)
pick at compile time. The band loop steps STEP output rows at a time, unrolled, so that STEP x
stride input rows' loads are independent and in flight together: a step tests once whether all its
rows lie inside the input (plain taps in straight code, else masked ones; a test per row is a branch
per row, which ptxas does not hoist loads across), and stores its rows after all its loads (a store
may alias the input, so ptxas issues no load past one; compiled for sm_90, 42's step of 8 rows
issues its 32 loads together). max folds with one NaN-propagating maximum (max.NaN.f32) instead of
a compare, an `or` and a select.

SLIDE (the launcher's: windows share rows and their span fits the queue) turns the queue on; off
(other run-time parameters than the traced ones, or no overlap) each output row folds its window's
rows directly. A 1-D pool has no queue: its STEP outer rows per step are independent. The last step
of a band may pass its end: those rows are computed on clamped or masked positions and not stored.
"""

from __future__ import annotations

from coders.template.emit.common import BodyEmitter, Writer
from coders.template.emit.pool_forms import is_vector
from coders.template.emit.pool_regions import NAN_MAX, Regions
from coders.template.emit.pool_rows import (
    _input_row,
    _loader,
    _loop,
    _output_row,
    _positions,
    _prologue_once,
    _row_result,
    _row_taps,
    _wide_outer,
)
from coders.template.ir import Kernel


def queue_slots(kernel: Kernel) -> int:
    """QUEUE: the traced window's span of rows (along the pooled dim before the last), 1 where the
    window is not fixed (then SLIDE is never on)."""
    fixed = kernel.space.get("fixed")
    nd = kernel.space["nd"]
    if not fixed or nd < 2:
        return 1
    r = nd - 2
    return (fixed["kernel_size"][r] - 1) * fixed.get("dilation", [1] * nd)[r] + 1


def emit_body(w: Writer, kernel: Kernel, regions: Regions) -> None:
    """The kernel's body after its header (emit/pool.py writes the header)."""
    region = ["hoist"]
    body = BodyEmitter(kernel, _loader(regions, region))
    _positions(w, regions, is_vector(kernel))
    w("plane_mask = mask  # the strip's columns; a row past the band's end masks them all")
    if regions.nd == 1:
        _steps(w, kernel, regions, lambda inner: _step_1d(w, kernel, regions, body, region, inner),
               "(plane_step + STEP <= plane_end)")
    else:
        _prologue_once(w, regions, body, region)
        _slide_rows(w, kernel, regions, body, region)
    w()


def _steps(w: Writer, kernel: Kernel, regions: Regions, step, inside: str) -> None:
    """The band's loop, STEP output rows per step. A step whose strip and rows all lie inside the
    input (`inside`) takes plain taps in straight code, the others masked taps: a test per step, not
    per row, so that the step's loads have no branch between them and issue together. Vector taps
    are masked anyway (no split)."""
    w("for plane_step in range(plane_first, plane_end, STEP):")
    w.indent()
    if is_vector(kernel):
        step(False)
    else:
        w(f"if plane_inner & {inside}:")
        w.indent()
        step(True)
        w.dedent()
        w("else:")
        w.indent()
        step(False)
        w.dedent()
    w.dedent()


def _step_1d(w: Writer, kernel: Kernel, regions: Regions, body: BodyEmitter, region: list,
             inner: bool) -> None:
    """A step's STEP outer rows: every row's taps, then every row's store (a store may alias the
    input, so no load is issued past one: the stores come last for the loads to issue together)."""
    step = int(kernel.config["slide"])
    for u in range(step):
        _row_1d(w, regions, body, region, u)
        _row_taps(w, kernel, regions, body, region, inner=inner)
        w(f"win_out{u} = win_row")
    for u in range(step):
        _row_1d(w, regions, body, region, u)
        w(f"win_acc = win_out{u}")
        _output_row(w, kernel, regions, body, region)


def _row_1d(w: Writer, regions: Regions, body: BodyEmitter, region: list, u: int) -> None:
    w(f"plane_row = plane_step + {u}")
    w("mask = tl.where(plane_row < plane_end, plane_mask, False)")
    w("outer = tl.minimum(plane_row, plane_end - 1)  # a row past the band: the last one, not stored")
    _wide_outer(w)
    _prologue_once(w, regions, body, region)


def _slide_rows(w: Writer, kernel: Kernel, regions: Regions, body: BodyEmitter, region: list) -> None:
    r, max_pool, queue = regions.nd - 2, regions.kind == "max", queue_slots(kernel)
    init = "float(\"-inf\")" if max_pool else "0.0"
    dl = f" * DL{r}" if max_pool else ""
    span = f"((KS{r} - 1){dl} + 1)"
    w("if SLIDE:")
    w.indent()
    for q in range(queue):
        w(f"win_q{q} = tl.full([BLOCK_N], {init}, tl.float32)")
    w(f"# the first window's rows but its last ST{r}, which the first step pushes")
    w(f"for win_k in tl.static_range({span} - ST{r}):")
    w.indent()
    _input_row(w, r, f"wi{r} = plane_first * ST{r} - PD{r} + win_k")
    _row_result(w, kernel, regions, body, region)
    _push(w, queue)
    w.dedent()
    w.dedent()
    inside = (f"(plane_step + STEP <= plane_end) & (plane_step * ST{r} - PD{r} >= 0) & "
              f"((plane_step + STEP - 1) * ST{r} - PD{r} + {span} <= IN{r})")
    _steps(w, kernel, regions, lambda inner: _step(w, kernel, regions, body, region, inner), inside)


def _step(w: Writer, kernel: Kernel, regions: Regions, body: BodyEmitter, region: list, inner: bool) -> None:
    """One step's STEP output rows: each pushes its window's new rows and reduces the queue (SLIDE),
    or folds its window's rows in directly; then their stores, after every load of the step (a store
    may alias the input, so no load is issued past one)."""
    r, max_pool, queue = regions.nd - 2, regions.kind == "max", queue_slots(kernel)
    init = "float(\"-inf\")" if max_pool else "0.0"
    dl = f" * DL{r}" if max_pool else ""
    span = f"((KS{r} - 1){dl} + 1)"
    step = int(kernel.config["slide"])
    for u in range(step):
        _output_position(w, r, u)
        w("if SLIDE:")
        w.indent()
        w(f"for win_s in tl.static_range(ST{r}):")
        w.indent()
        _input_row(w, r, f"wi{r} = lo{r} + {span} - ST{r} + win_s")
        _row_taps(w, kernel, regions, body, region, inner=inner)
        _push(w, queue)
        w.dedent()
        _queue_window(w, r, max_pool, queue, span)
        w.dedent()
        w("else:")
        w.indent()
        w(f"win_acc = tl.full([BLOCK_N], {init}, tl.float32)")
        w(f"for kk{r} in {_loop(kernel, kernel.space.get('window'))}(KS{r}):")
        w.indent()
        _input_row(w, r, f"wi{r} = lo{r} + kk{r}{dl}")
        _row_taps(w, kernel, regions, body, region, inner=inner)
        w(f"win_acc = {NAN_MAX.format('win_acc', 'win_row')}" if max_pool else "win_acc += win_row")
        w.dedent()
        w.dedent()
        w(f"win_out{u} = win_acc")
    for u in range(step):
        _output_position(w, r, u)
        w(f"win_acc = win_out{u}")
        _output_row(w, kernel, regions, body, region)


def _output_position(w: Writer, r: int, u: int) -> None:
    """Output row plane_step + u: its window's first row lo{r}, oi{r}, and the strip's mask (off
    past the band's end)."""
    w(f"plane_o = plane_step + {u}")
    w("mask = tl.where(plane_o < plane_end, plane_mask, False)")
    w(f"lo{r} = plane_o * ST{r} - PD{r}")
    w(f"oi{r} = plane_o")
    w("if WIDE_PLANE:")
    w(f"    oi{r} = oi{r}.to(tl.int64)")


def _push(w: Writer, queue: int) -> None:
    """Row wi{r}'s result (win_row) into the queue's newest slot, the others one older (names, not
    data)."""
    for q in range(queue - 1):
        w(f"win_q{q} = win_q{q + 1}")
    w(f"win_q{queue - 1} = win_row")


def _queue_window(w: Writer, r: int, max_pool: bool, queue: int, span: str) -> None:
    """win_acc: the max or sum of the queue's slots in the window (its last `span` slots, every
    DL-th for max); each test is on constexprs, so only the window's slots are read."""
    first = f"{queue} - {span}"
    for q in range(queue):
        tap = f"({q} - ({first})) % DL{r} == 0" if max_pool else None
        w(f"if {q} == {first}:")
        w(f"    win_acc = win_q{q}")
        w(f"elif {q} > {first}:" if tap is None else f"elif ({q} > {first}) and ({tap}):")
        fold = NAN_MAX.format("win_acc", f"win_q{q}") if max_pool else f"win_acc + win_q{q}"
        w(f"    win_acc = {fold}")
