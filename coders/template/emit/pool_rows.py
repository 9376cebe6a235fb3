"""The pool kernel's rows form (emit/pool.py dispatches here; pool_forms.py says where it applies).

Why a third form: in the flat and tile forms every output gathers its own K**nd taps, so each input
element is loaded K**nd times through L1 (42's 4 x 4 window: 16 loads per output; 19-30% of the
memory floor on an H100), and the flat form pays a div/mod chain per element. Here a program owns a
strip of BLOCK_N output columns of one plane (of one output depth in 3-D) and a band of BAND output
rows, and walks the band down the rows:

- a "row result" is the max or sum over the window's last-dim taps (in 3-D also its depth taps) of
  one input row, at every column of the strip: KS shifted loads of a contiguous strip (the first from
  memory, the rest L1 hits), or with vector taps one [BLOCK_N, KV] load per KV taps (a strided
  window's taps are a contiguous run: 45's 11 at stride 11);
- where the windows' rows overlap (OVERLAP: stride < span, as 42's stride 1 or 43's and 46's stride
  2 over 3 taps), each input row's result is computed once and kept in a ring of RING registers per
  column (slot row % RING, RING >= the span); an output row is the max or sum of the ring's slots
  in its window. Each input row is loaded once per program instead of once per window it is in;
- otherwise (45: stride = kernel) the window's rows are folded straight into the output row;
- a 1-D pool's rows are the outer rows, each pooled on its own.

The program id gives (plane, band, strip) once per program: no per-element div/mod. Offsets within
a plane are 32-bit unless a plane passes 2**30 elements; the plane's base is 64-bit where the tensor
does. Each output row is one contiguous store of the strip. The launcher picks BAND so that there are
enough programs to fill the GPU (pool_launch.py); a band re-reads the span - stride rows before it.

Rows skipped by every window (a dilation that leaves holes, as stride 3 over taps 2 apart) are still
loaded where the ring is on: a row is loaded if it lies between a window's first and last row.
"""

from __future__ import annotations

from coders.template.emit import pool_shift, pool_stack
from coders.template.emit.common import BodyEmitter, Writer, ptr, var
from coders.template.emit.pool_forms import is_slide, is_vector
from coders.template.emit.pool_regions import NAN_MAX, UNROLL, Regions, emit_outer_split, emit_pooled
from coders.template.emit.pool_shift import is_shift
from coders.template.ir import Kernel

NO_ROW = -(2**30)  # an empty ring slot's row: below every window's first row


def emit_body(w: Writer, kernel: Kernel, regions: Regions) -> None:
    """The kernel's body after its header (emit/pool.py writes the header)."""
    region = ["hoist"]
    body = BodyEmitter(kernel, _loader(regions, region))
    _positions(w, regions, is_vector(kernel))
    if regions.nd == 1:
        w("for plane_row in range(plane_first, plane_end):")
        w.indent()
        w("outer = plane_row")
        _wide_outer(w)
        _prologue_once(w, regions, body, region)
        _row_result(w, kernel, regions, body, region)
        w("win_acc = win_row")
        _output_row(w, kernel, regions, body, region)
        w.dedent()
    else:
        _prologue_once(w, regions, body, region)
        _walk_rows(w, kernel, regions, body, region)
    w()


def depth_index(w: Writer, corner: bool = True) -> None:
    """A 3-D pool's output depth `oi0` split off `outer` (int64 where a plane's offsets need it), and
    with `corner` its window's first input depth `lo0`: the same lines in every pool form."""
    w("oi0 = outer % OUT0")
    w("outer = outer // OUT0")
    w("if WIDE_PLANE:")
    w("    oi0 = oi0.to(tl.int64)")
    if corner:
        w("lo0 = oi0 * ST0 - PD0")


def _wide_outer(w: Writer) -> None:
    w("if WIDE:")
    w("    outer = outer.to(tl.int64)")


def _prologue_once(w: Writer, regions: Regions, body: BodyEmitter, region: list) -> None:
    """The outer dims' indices and the prologue ops that read no pooled dim: one value per plane."""
    emit_outer_split(w, regions)
    region[0] = "hoist"
    for op in regions.hoisted:
        w(body.statement(op))


def _positions(w: Writer, regions: Regions, vector: bool) -> None:
    """The program's strip of columns (oi{last}, mask), its band of rows [plane_first, plane_end)
    and, above 1-D, its plane `outer` (and in 3-D its output depth oi0)."""
    nd, last = regions.nd, regions.nd - 1
    n_rows = "ROWS" if nd == 1 else f"OUT{nd - 2}"
    w("pid = tl.program_id(0)")
    sw = pool_stack.width(regions.kernel)  # a plane's row in the strip (pool_stack.py: stacked planes)
    w(f"plane_strips = tl.cdiv(OUT{last}, {sw})")
    w(f"plane_bands = tl.cdiv({n_rows}, BAND)")
    w("plane_first = (pid // plane_strips) % plane_bands * BAND")
    w(f"plane_end = tl.minimum(plane_first + BAND, {n_rows})")
    w(f"plane_c0 = (pid % plane_strips) * {sw}")
    w(f"oi{last} = plane_c0 + {pool_stack.columns(regions.kernel)}")
    w("# in-plane positions stay 32-bit unless a plane passes 2**30 elements")
    w("if WIDE_PLANE:")
    w(f"    oi{last} = oi{last}.to(tl.int64)")
    w(f"mask = oi{last} < OUT{last}")
    w(f"lo{last} = oi{last} * ST{last} - PD{last}")
    dl = (lambda j: f" * DL{j}") if regions.kind == "max" else (lambda j: "")
    w("# a whole strip whose windows lie inside the input rows: its taps need no masks")
    w(f"plane_inner = (plane_c0 * ST{last} - PD{last} >= 0) & (plane_c0 + {sw} <= OUT{last}) & "
      f"((plane_c0 + {sw} - 1) * ST{last} - PD{last} + (KS{last} - 1){dl(last)} < IN{last})")
    if is_shift(regions.kernel):
        pool_shift.emit_inner_bounds(w, regions.kernel, last)
    w(f"plane_in = {' * '.join(f'IN{j}' for j in range(nd))}")
    w("plane_zero = tl.zeros([BLOCK_N], tl.int32)  # gives a plane's one number the strip's shape")
    if vector:
        w("win_kv = tl.arange(0, KV)[None, :]")
        w("win_zero = tl.zeros([BLOCK_N, KV], tl.int32)")
    else:
        w("win_zero = plane_zero")
    if nd == 1:
        return
    w("outer = pid // (plane_strips * plane_bands)")
    if nd == 3:
        depth_index(w)
        dl0 = " * DL0" if regions.kind == "max" else ""
        w(f"plane_inner = plane_inner & (lo0 >= 0) & (lo0 + (KS0 - 1){dl0} < IN0)")
    pool_stack.emit_outer(w, regions.kernel, nd)
    _wide_outer(w)
    w(f"plane_out = {' * '.join(f'OUT{j}' for j in range(nd))}")


def _loader(regions: Regions, region: list):
    """The body's loads: at a tap ("win", masked by win_valid), at the output row ("out", masked by
    the strip's mask) or once per plane ("hoist": an operand of outer dims only, one number)."""
    full = list(range(regions.rank))

    def load(op, operand) -> str:
        if operand.scalar:
            return f"{var(operand.value)} * 1.0" if not operand.integer else var(operand.value)
        where = regions.address(operand.dims, {"hoist": "out", "inner": "win"}.get(region[0], region[0]))
        pointer = ptr(operand.value) if where == "0" else f"{ptr(operand.value)} + {where}"
        if region[0] == "hoist":
            text = f"tl.load({pointer})"
        elif region[0] == "inner":  # a tap of a strip inside the input: no mask
            text = f"tl.load({pointer}{'' if operand.dims == full else ' + win_zero'})"
        else:
            # the plane's base first: `ptr + outer * plane_in + win_pos` adds 32-bit offsets to it
            zero = "" if operand.dims == full else (" + win_zero" if region[0] == "win" else " + plane_zero")
            masked = "win_valid" if region[0] == "win" else "mask"
            text = f"tl.load({pointer}{zero}, mask={masked}, other=0)"
        return text if operand.integer else f"{text}.to(tl.float32)"
    return load


def _loop(kernel: Kernel, taps: int | None) -> str:
    """Unroll a loop of `taps` taps where they are known and few (their loads then overlap)."""
    return "tl.static_range" if taps is not None and taps <= UNROLL else "range"


def _fixed_taps(kernel: Kernel, dims: list[int]) -> int | None:
    fixed = kernel.space.get("fixed")
    if not fixed:
        return None
    taps = 1
    for j in dims:
        taps *= fixed["kernel_size"][j]
    return taps


def _row_result(w: Writer, kernel: Kernel, regions: Regions, body: BodyEmitter, region: list) -> None:
    """`win_row`: the max or sum over the window's last-dim (and depth) taps of input row wi{nd-2}
    (of the outer row in 1-D), at each column of the strip. Where the strip and the row lie inside
    the input (every program but the borders' on 41-46), the taps are plain loads: no masks to
    compute (an H100 issues about as many instructions as a stride-1 window's masked taps take)."""
    if is_vector(kernel):  # a vector step's taps past the window are masked anyway
        _row_taps(w, kernel, regions, body, region, inner=False)
        return
    r = regions.nd - 2
    w("if plane_inner" + (f" & (wi{r} >= 0) & (wi{r} < IN{r}):" if regions.nd > 1 else ":"))
    w.indent()
    _row_taps(w, kernel, regions, body, region, inner=True)
    w.dedent()
    w("else:")
    w.indent()
    _row_taps(w, kernel, regions, body, region, inner=False)
    w.dedent()


def _row_taps(w: Writer, kernel: Kernel, regions: Regions, body: BodyEmitter, region: list,
              inner: bool) -> None:
    """_row_result's loops over the taps, masked at the borders unless `inner`."""
    nd, last, max_pool, vector = regions.nd, regions.nd - 1, regions.kind == "max", is_vector(kernel)
    w("win_row = tl.full([BLOCK_N], float(\"-inf\"), tl.float32)" if max_pool else
      "win_row = tl.zeros([BLOCK_N], dtype=tl.float32)")
    loop = _loop(kernel, _fixed_taps(kernel, [0, last] if nd == 3 else [last]))
    dl = (lambda j: f" * DL{j}") if max_pool else (lambda j: "")
    rows_ok = [f"(wi{nd - 2} >= 0) & (wi{nd - 2} < IN{nd - 2})"] if nd > 1 else []
    if nd == 3:
        w(f"for kk0 in {loop}(KS0):")
        w.indent()
        w(f"wi0 = lo0 + kk0{dl(0)}")
        rows_ok.append("(wi0 >= 0) & (wi0 < IN0)")
    if is_shift(kernel):  # the traced window's chunks where the run-time one is it (SHIFT)
        w("if SHIFT:")
        w.indent()
        pool_shift.emit_taps(w, kernel, regions, body, region, inner, rows_ok)
        w.dedent()
        w("else:")
        w.indent()
    if vector:
        w(f"for kk{last} in {loop}(0, KS{last}, KV):")
        w.indent()
        w(f"wi{last} = lo{last}[:, None] + (kk{last} + win_kv){dl(last)}")
        valid = f"mask[:, None] & (kk{last} + win_kv < KS{last}) & (wi{last} >= 0) & (wi{last} < IN{last})"
    else:
        w(f"for kk{last} in {loop}(KS{last}):")
        w.indent()
        w(f"wi{last} = lo{last} + kk{last}{dl(last)}")
        valid = f"mask & (wi{last} >= 0) & (wi{last} < IN{last})"
    if rows_ok:
        # the row (and depth) test is one number: `scalar & block` gives int32 data on the
        # interpreter (Triton 3.9), which a load's mask refuses; a select instead
        valid = f"tl.where({' & '.join(rows_ok)}, {valid}, False)"
    if not inner:
        w(f"win_valid = {valid}")
    pos = {1: "wi0", 2: "wi0 * IN1 + wi1", 3: "(wi0 * IN1 + wi1) * IN2 + wi2"}[nd]
    w(f"win_pos = {pos}")
    region[0] = "inner" if inner else "win"
    for op in regions.per_tap:
        w(body.statement(op))
    _fold_row(w, max_pool, vector, body.arg(regions.pool.args[0]), inner, is_slide(kernel))
    w.dedent()
    if is_shift(kernel):
        w.dedent()
    if nd == 3:
        w.dedent()


def _fold_row(w: Writer, max_pool: bool, vector: bool, value: str, inner: bool,
              nan_max: bool = False) -> None:
    """Fold one tap (vector taps: KV taps, reduced along axis 1) into win_row. max as PyTorch's:
    a NaN wins (tl.max does not promise to propagate it, hence the separate test; with `nan_max`,
    the slide's, one NaN-propagating maximum: PTX max.NaN.f32)."""
    if not max_pool:
        taps = value if inner else f"tl.where(win_valid, {value}, 0.0)"
        w(f"win_row += tl.sum({taps}, axis=1)" if vector else f"win_row += {taps}")
        return
    w(f"win_val = {value}" if inner else f"win_val = tl.where(win_valid, {value}, float(\"-inf\"))")
    if vector:
        w("win_nan = tl.max((win_val != win_val).to(tl.int32), axis=1) > 0")
        w("win_val = tl.where(win_nan, float(\"nan\"), tl.max(win_val, axis=1))")
    if nan_max:
        w(f"win_row = {NAN_MAX.format('win_row', 'win_val')}")
        return
    w("win_row = tl.where((win_val > win_row) | (win_val != win_val), win_val, win_row)")


def _walk_rows(w: Writer, kernel: Kernel, regions: Regions, body: BodyEmitter, region: list) -> None:
    """The band's output rows, one after another; each row's window from the ring (OVERLAP) or
    from its rows folded in directly."""
    r, max_pool = regions.nd - 2, regions.kind == "max"
    init = "float(\"-inf\")" if max_pool else "0.0"
    dl = f" * DL{r}" if max_pool else ""
    w("if OVERLAP:")
    w(f"    plane_next = plane_first * ST{r} - PD{r}  # the first row not yet in the ring")
    w(f"    win_ring = tl.full([RING, BLOCK_N], {init}, tl.float32)")
    w(f"    win_ring_row = tl.full([RING], {NO_ROW}, tl.int32)  # the input row each slot holds")
    w("    win_slot = tl.arange(0, RING)")
    w("for plane_o in range(plane_first, plane_end):")
    w.indent()
    # the ring's row numbers stay 32-bit (a loop-carried value keeps its type); positions may not
    w(f"lo{r} = plane_o * ST{r} - PD{r}")
    w(f"oi{r} = plane_o")
    w("if WIDE_PLANE:")
    w(f"    oi{r} = oi{r}.to(tl.int64)")
    w("if OVERLAP:")
    w.indent()
    w(f"win_hi = lo{r} + (KS{r} - 1){dl} + 1")
    w(f"for win_r in range(tl.maximum(plane_next, lo{r}), win_hi):")
    w.indent()
    _input_row(w, r, f"wi{r} = win_r")
    _row_result(w, kernel, regions, body, region)
    w("win_fill = win_slot == (win_r & (RING - 1))")
    w("win_ring = tl.where(win_fill[:, None], win_row[None, :], win_ring)")
    w("win_ring_row = tl.where(win_fill, win_r, win_ring_row)")
    w.dedent()
    w("plane_next = tl.maximum(plane_next, win_hi)")
    _ring_window(w, r, max_pool)
    w.dedent()
    w("else:")
    w.indent()
    w(f"win_acc = tl.full([BLOCK_N], {init}, tl.float32)")
    w(f"for kk{r} in {_loop(kernel, kernel.space.get('window'))}(KS{r}):")
    w.indent()
    _input_row(w, r, f"wi{r} = lo{r} + kk{r}{dl}")
    _row_result(w, kernel, regions, body, region)
    if max_pool:
        w("win_acc = tl.where((win_row > win_acc) | (win_row != win_row), win_row, win_acc)")
    else:
        w("win_acc += win_row")
    w.dedent()
    w.dedent()
    _output_row(w, kernel, regions, body, region)
    w.dedent()


def _input_row(w: Writer, r: int, row: str) -> None:
    w(row)
    w("if WIDE_PLANE:")
    w(f"    wi{r} = wi{r}.to(tl.int64)")


def _ring_window(w: Writer, r: int, max_pool: bool) -> None:
    """win_acc: the max or sum of the ring's slots that hold a row of output row oi{r}'s window."""
    in_window = f"(win_ring_row >= lo{r}) & (win_ring_row < win_hi)"
    if max_pool:
        in_window += f" & ((win_ring_row - lo{r}) % DL{r} == 0)"
        w(f"win_val = tl.where(({in_window})[:, None], win_ring, float(\"-inf\"))")
        w("win_nan = tl.max((win_val != win_val).to(tl.int32), axis=0) > 0")
        w("win_acc = tl.where(win_nan, float(\"nan\"), tl.max(win_val, axis=0))")
    else:
        w(f"win_acc = tl.sum(tl.where(({in_window})[:, None], win_ring, 0.0), axis=0)")


def _output_row(w: Writer, kernel: Kernel, regions: Regions, body: BodyEmitter, region: list) -> None:
    """The pooled value of one output row of the strip, the epilogue, and its contiguous store."""
    offs = {1: "outer * OUT0 + oi0", 2: "outer * plane_out + oi0 * OUT1 + oi1",
            3: "outer * plane_out + (oi0 * OUT1 + oi1) * OUT2 + oi2"}[regions.nd]
    w(f"offs = {offs}")
    emit_pooled(w, regions, body)
    region[0] = "out"
    for op in regions.after:
        w(body.statement(op))
    for out in kernel.outputs:
        w(f"tl.store({ptr(out.value)} + offs, {body.store_value(out.src)}.to({ptr(out.value)}.dtype."
          "element_ty), mask=mask)")
