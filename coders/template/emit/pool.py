"""Pooling kernels: each program owns a block of output elements and walks their windows.

Three forms, chosen by the kernel's config (`form`; the menu's `tile` and `vectorize` steps, see
`configure`; the port's choice is pool_forms.port_config):

- "flat" (BLOCK): a program owns BLOCK output elements of the flat-indexed output, like an
  elementwise kernel; each element's pooled position comes from div/mod of its flat index.
- "tile" (BLOCK_M x BLOCK_N): a program owns a tile of BLOCK_M output rows x BLOCK_N output
  columns of one plane (the last pooled dim is the columns; the rows are the pooled dim before it,
  or for a 1-D pool the outer rows). The program id alone gives (plane, row block, column block):
  no per-element div/mod, and a window tap's loads are contiguous along the columns where the stride
  is 1. With `vector`, the taps along the last pooled dim are a third tile axis of KV (a power of
  two) loaded at once and reduced in registers: a strided window (stride >= kernel: 45's 11 x 11)
  reads contiguous runs instead of one element per stride. Preconditions of `vector`: a fixed
  (not adaptive) window and no return_indices (a reduced tap loses its position); `vector_ok`.
- "rows" (BLOCK_N, emit/pool_rows.py; the port's where it applies): a program walks a strip of
  BLOCK_N output columns down a band of output rows, reads each input row once and keeps the rows
  its windows share in registers. Same preconditions as `vector`, which it also takes. Its slide
  (config `slide`, emit/pool_slide.py) keeps those rows in a queue and walks several output rows
  per step: the port's where undilated 2-D and 3-D windows share rows (pool_forms.slide_in_port).
  Its shifted taps (config `shift`, emit/pool_shift.py) form a row's last-dim taps in registers from
  aligned 128-bit chunks of the input row: the port's where the 2026-11-28 probe measured them win
  (pool_forms.shift_in_port: on an H100, h100-shift.log, KernelBench 41 56.8 -> 94.2% of the memory
  floor, 44 67.6 -> 94.4, 42 42.6 -> 89.4, 43 43.7 -> 69.3), which takes precedence over the slide's
  strip of 128 and the dilated windows' flat form. The slide's separated taps (config `sep`,
  emit/pool_sep.py) take the depth and row taps over whole input rows and the last dim's once per
  output row: the port's on 43's window only (pool_forms.sep_in_port: on an H200, the 2026-11-30
  probe, 54.2 -> 93.1%), ahead of the shift.

Along
each pooled dim j an element's window starts at `oi * stride - padding` and has KS{j} taps `dilation`
apart (constexpr sizes read from the parameters at run time: small windows are unrolled); an adaptive
window runs from floor(oi * IN / OUT) to ceil((oi + 1) * IN / OUT), at most KMAX{j} taps.

The body splits by data flow around the `pool` op. The ops its argument depends on are the prologue,
applied to every window element: operands spanning a pooled dim are read at the window position,
the rest once per output element before the loop. The ops after the pool are the epilogue, at the
output position. Window positions outside the input are dropped *after* the prologue (max: -inf,
avg: 0), so padding keeps the pool's value, not f(padding).

max follows PyTorch's kernels: a NaN wins (the last NaN's position is its index), ties keep the first
position, and an index is the flat position within the input's pooled dims. avg divides by the window
clipped to the padded input (count_include_pad) or to the input, or by divisor_override; adaptive avg
by the window's size.
"""

from __future__ import annotations

from coders.template.emit import pool_rows, pool_sep, pool_slide
from coders.template.emit.common import BodyEmitter, Writer, ptr, var
from coders.template.emit.launch import kernel_header
from coders.template.emit.pool_forms import (  # noqa: F401 - the forms and menu steps, re-exported
    TILES,
    VECTOR_MAX,
    VECTOR_TILE,
    Shape,
    configure,
    form_steps,
    is_rows,
    is_slide,
    is_tile,
    is_vector,
    vector_ok,
)
from coders.template.emit.pool_launch import emit_helpers, emit_launcher, tuning_space  # noqa: F401
from coders.template.emit.pool_regions import (  # noqa: F401 - re-exported
    UNROLL,
    Regions,
    check,
    emit_outer_split,
    emit_pooled,
    renamed,
)
from coders.template.emit.pool_shift import is_shift
from coders.template.emit.pool_stack import is_stack
from coders.template.ir import Kernel

# --------------------------------------------------------------------------------------------------
# the kernel
# --------------------------------------------------------------------------------------------------

def _params(kernel: Kernel, regions: Regions) -> tuple[list[str], list[str]]:
    """(run-time parameters, constexpr parameters) of the kernel."""
    nd = regions.nd
    params = [var(o.value) if o.scalar else ptr(o.value) for o in kernel.operands]
    params += [ptr(o.value) for o in kernel.outputs] + ["n"]
    if regions.split_outer():
        params += [f"SZ{d}" for d in range(regions.n_outer)]
    params += [f"IN{j}" for j in range(nd)] + [f"OUT{j}" for j in range(nd)]
    if (is_tile(kernel) or is_rows(kernel)) and nd == 1:
        params.append("ROWS")  # the outer rows of a 1-D pool are the tile's (the walk's) rows
    if is_rows(kernel):
        params.append("BAND")  # output rows per program: a run-time number, picked by the launcher
        if is_slide(kernel):
            block = ["WIDE", "WIDE_PLANE", "BLOCK_N", "STEP"] + (["SLIDE"] if nd > 1 else [])
        else:
            block = ["WIDE", "WIDE_PLANE", "BLOCK_N"] + (["RING", "OVERLAP"] if nd > 1 else [])
    elif is_tile(kernel):
        block = ["WIDE", "WIDE_PLANE", "BLOCK_M", "BLOCK_N"]
    else:
        block = ["WIDE", "BLOCK"]
    block += ["KV"] if is_vector(kernel) else []
    block += ["SHIFT"] if is_shift(kernel) else []
    block += ["STACK"] if is_stack(kernel) else []
    block += ["SEP"] if pool_sep.is_sep(kernel) else []
    if regions.adaptive:
        return params + [f"KMAX{j}" for j in range(nd)], block
    constexprs = [f"{c}{j}" for c in ("KS", "ST", "PD") for j in range(nd)]
    if regions.kind == "max":
        constexprs += [f"DL{j}" for j in range(nd)]
    else:
        constexprs += ["COUNT_PAD", "DIVISOR"]
    return params, constexprs + block


def emit_kernel(w: Writer, kernel: Kernel, name: str) -> None:
    kernel = renamed(kernel)
    regions = Regions(kernel)
    nd = regions.nd
    params, constexprs = _params(kernel, regions)
    kernel_header(w, kernel, name, params, constexprs)
    w.indent()
    if is_rows(kernel):
        form = pool_sep if pool_sep.is_sep(kernel) else pool_slide if is_slide(kernel) else pool_rows
        form.emit_body(w, kernel, regions)
        w.dedent()
        return
    if is_tile(kernel):
        _tile_positions(w, regions, Shape(kernel))
    else:
        _flat_positions(w, regions)
    emit_outer_split(w, regions)
    w(f"plane_in = {' * '.join(f'IN{j}' for j in range(nd))}")
    for j in range(nd):
        if regions.adaptive:
            w(f"lo{j} = oi{j} * IN{j} // OUT{j}")
            w(f"hi{j} = ((oi{j} + 1) * IN{j} + OUT{j} - 1) // OUT{j}")
        else:
            w(f"lo{j} = oi{j} * ST{j} - PD{j}")
    region = ["out"]
    tile = is_tile(kernel)

    def load(op, operand):
        if operand.scalar:
            return f"{var(operand.value)} * 1.0" if not operand.integer else var(operand.value)
        where = regions.address(operand.dims, region[0])
        if where == "0":
            text = f"tl.load({ptr(operand.value)})"
        else:
            if tile and where != "offs":
                # a tile's plane index is one number: a block of offsets takes the block mask
                where = f"{where} + plane_zero"
            masked = "win_valid" if region[0] == "win" else "mask"
            text = f"tl.load({ptr(operand.value)} + {where}, mask={masked}, other=0)"
        return text if operand.integer else f"{text}.to(tl.float32)"

    body = BodyEmitter(kernel, load)
    for op in regions.hoisted:
        w(body.statement(op))
    _window_loops(w, kernel, regions, body, region)
    emit_pooled(w, regions, body)
    for op in regions.after:
        w(body.statement(op))
    for out in kernel.outputs:
        w(f"tl.store({ptr(out.value)} + offs, {body.store_value(out.src)}.to({ptr(out.value)}.dtype."
          "element_ty), mask=mask)")
    w.dedent()
    w()


def _flat_positions(w: Writer, regions: Regions) -> None:
    """offs, mask, outer and oi{j} of BLOCK flat output elements (div/mod per element)."""
    w("pid = tl.program_id(0)")
    w("# 64-bit index arithmetic only where an offset may pass 2**31: 32-bit divisions are cheaper")
    w("if WIDE:")
    w("    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)")
    w("else:")
    w("    offs = pid * BLOCK + tl.arange(0, BLOCK)")
    w("mask = offs < n")
    w("# the output's position along each pooled dim, then the flat index of the dims before them")
    w("outer = offs")
    for j in reversed(range(regions.nd)):
        w(f"oi{j} = outer % OUT{j}")
        w(f"outer = outer // OUT{j}")


def _tile_positions(w: Writer, regions: Regions, shape: Shape) -> None:
    """offs, mask, outer and oi{j} of a BLOCK_M x BLOCK_N tile of output rows x columns: the
    program id is (plane, row block, column block), row and column blocks fastest so that the
    neighbouring programs that share a window's halo rows run together (L2)."""
    nd, last = regions.nd, regions.nd - 1
    n_rows = "ROWS" if nd == 1 else f"OUT{nd - 2}"
    w("pid = tl.program_id(0)")
    w(f"plane_ncols = tl.cdiv(OUT{last}, BLOCK_N)")
    w(f"plane_tiles = tl.cdiv({n_rows}, BLOCK_M) * plane_ncols")
    w("tile = pid % plane_tiles")
    w("rows = (tile // plane_ncols) * BLOCK_M + tl.arange(0, BLOCK_M)")
    w("cols = (tile % plane_ncols) * BLOCK_N + tl.arange(0, BLOCK_N)")
    w("# in-plane positions stay 32-bit unless a plane passes 2**30 elements; the plane's base is")
    w("# 64-bit where the whole tensor does")
    w("if WIDE_PLANE:")
    w("    rows = rows.to(tl.int64)")
    w("    cols = cols.to(tl.int64)")
    if nd == 1:
        w(f"outer = {shape.rows('rows')}")
        w("if WIDE:")
        w("    outer = outer.to(tl.int64)")
        w(f"oi0 = {shape.cols('cols')}")
        w("mask = (outer < ROWS) & (oi0 < OUT0)")
        w("offs = outer * OUT0 + oi0")
    else:
        w("outer = pid // plane_tiles")
        if nd == 3:
            pool_rows.depth_index(w, corner=False)
        w("if WIDE:")
        w("    outer = outer.to(tl.int64)")
        w(f"oi{last - 1} = {shape.rows('rows')}")
        w(f"oi{last} = {shape.cols('cols')}")
        w(f"mask = (oi{last - 1} < OUT{last - 1}) & (oi{last} < OUT{last})")
        pos = f"oi{last - 1} * OUT{last} + oi{last}" if nd == 2 else "(oi0 * OUT1 + oi1) * OUT2 + oi2"
        w(f"offs = outer * ({' * '.join(f'OUT{j}' for j in range(nd))}) + {pos}")
    w(f"plane_zero = tl.zeros({shape.full()}, tl.int32)")


def _window_loops(w: Writer, kernel: Kernel, regions: Regions, body: BodyEmitter, region: list) -> None:
    """One loop per pooled dim over the window's taps; the innermost folds each tap in. In the
    vector form the last dim's loop steps KV taps at a time along the tile's third axis."""
    nd, max_pool = regions.nd, regions.kind == "max"
    shape = Shape(kernel)
    w(f"win_acc = tl.full({shape.full()}, float(\"-inf\"), tl.float32)" if max_pool else
      f"win_acc = tl.zeros({shape.full()}, dtype=tl.float32)")
    if regions.index is not None:
        w(f"win_arg = tl.full({shape.full()}, -1, tl.int64)")
    if shape.vector:
        w("win_kv = tl.arange(0, KV)[None, None, :]")
    window = kernel.space.get("window")
    loop = "tl.static_range" if window is not None and window <= UNROLL else "range"
    for j in range(nd):
        if regions.adaptive:
            w(f"for kk{j} in range(KMAX{j}):")
            w.indent()
            w(f"wi{j} = lo{j} + kk{j}")
            inside = f"wi{j} < hi{j}"
        elif shape.vector and j == nd - 1:
            w(f"for kk{j} in {loop}(0, KS{j}, KV):")
            w.indent()
            w(f"wi{j} = lo{j} + (kk{j} + win_kv)" + (f" * DL{j}" if max_pool else ""))
            inside = f"(kk{j} + win_kv < KS{j}) & (wi{j} >= 0) & (wi{j} < IN{j})"
        else:
            w(f"for kk{j} in {loop}(KS{j}):")
            w.indent()
            w(f"wi{j} = lo{j} + kk{j}" + (f" * DL{j}" if max_pool else ""))
            inside = f"(wi{j} >= 0) & (wi{j} < IN{j})"
        if j and shape.tile and regions.nd == 3 and j == 1:
            # ok0 is one number per program here; `scalar & block` gives int32 data on the
            # interpreter (Triton 3.9), which a load's mask then refuses: a select instead
            w(f"ok{j} = tl.where(ok{j - 1}, {inside}, False)")
        else:
            w(f"ok{j} = " + (f"ok{j - 1} & " if j else "") + f"({inside})")
    w(f"win_valid = mask & ok{nd - 1}")
    pos = "wi0"
    for j in range(1, nd):
        pos = f"({pos}) * IN{j} + wi{j}" if j > 1 else f"{pos} * IN{j} + wi{j}"
    w(f"win_pos = {pos}")
    region[0] = "win"
    for op in regions.per_tap:
        w(body.statement(op))
    region[0] = "out"
    _fold_tap(w, regions, shape, body.arg(regions.pool.args[0]))
    for _ in range(nd):
        w.dedent()


def _fold_tap(w: Writer, regions: Regions, shape: Shape, value: str) -> None:
    """Fold one tap (or, in the vector form, KV taps) into the running max or sum."""
    if regions.kind == "max":
        w(f"win_val = tl.where(win_valid, {value}, float(\"-inf\"))")
        if shape.vector:
            # the taps' max, NaN if any tap is NaN (tl.max does not promise to propagate it)
            w("win_nan = tl.max((win_val != win_val).to(tl.int32), axis=2, keep_dims=True) > 0")
            w("win_val = tl.where(win_nan, float(\"nan\"), tl.max(win_val, axis=2, keep_dims=True))")
        if regions.index is not None:
            # PyTorch's test: a larger value or a NaN replaces the running max; the first tap always
            w("win_take = win_valid & ((win_val > win_acc) | (win_val != win_val) | (win_arg < 0))")
            w("win_arg = tl.where(win_take, win_pos, win_arg)")
        else:
            w("win_take = (win_val > win_acc) | (win_val != win_val)")
        w("win_acc = tl.where(win_take, win_val, win_acc)")
    elif shape.vector:
        w(f"win_acc += tl.sum(tl.where(win_valid, {value}, 0.0), axis=2, keep_dims=True)")
    else:
        w(f"win_acc += tl.where(win_valid, {value}, 0.0)")
