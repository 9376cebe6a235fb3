"""Pooling kernels: each program owns a block of output elements and walks their windows.

Two forms, chosen by the kernel's config (`form`; the menu's `tile` and `vectorize` steps, see
`configure`):

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

import copy
import re

from coders.template.emit.common import BodyEmitter, FusionError, Writer, needed, ptr, var
from coders.template.emit.launch import Launcher, autotune_configs, kernel_header, output_alloc, wrap_call
from coders.template.ir import Kernel, Op
from coders.template.pooling import FIELDS
from mtmc.protocols import CoderError
from mtmc.strategies import Strategy

UNROLL = 64  # windows of at most this many taps (at the traced sizes) are unrolled
# the tile form's menu (rows x columns of output): a 1-D pool's rows are independent, so wide
# rows; a 2-D/3-D pool's row blocks share the windows' halo rows, so taller tiles
TILES = {1: ((1, 1024), (4, 256), (8, 128)), 2: ((8, 128), (16, 64), (32, 32), (4, 64))}
VECTOR_TILE = (8, 32)  # the tile `vectorize` picks from the flat form: KV taps per output in registers
VECTOR_MAX = 16  # a vector step's taps along the last dim, at most (registers: BLOCK_M x BLOCK_N x KV)
# the template's own names; body values that match are renamed before emitting
_TEMPLATE = re.compile(r"^(oi|wi|kk|lo|hi|ok|od|IN|OUT|SZ|KS|ST|PD|DL|KMAX)\d+$|^(win|plane)_|^odr$|"
                       r"^(ROWS|KV|WIDE|WIDE_PLANE|COUNT_PAD|DIVISOR)$")


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


def _renamed(kernel: Kernel) -> Kernel:
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


# --------------------------------------------------------------------------------------------------
# forms
# --------------------------------------------------------------------------------------------------

def is_tile(kernel: Kernel) -> bool:
    return kernel.config.get("form", "flat") == "tile"


def is_vector(kernel: Kernel) -> bool:
    """The vector form, where its preconditions hold (elsewhere the tile form loops over every tap)."""
    return is_tile(kernel) and bool(kernel.config.get("vector")) and vector_ok(kernel)


def vector_ok(kernel: Kernel) -> bool:
    """The window's last-dim taps may be loaded as one vector and reduced in registers: a fixed
    window (an adaptive one's length varies per output) and no indices (the reduction drops them)."""
    return not kernel.space["pool"].startswith("adaptive") and \
        not any(op.op == "pool_index" for op in kernel.body)


class Shape:
    """How the tile form's index tensors broadcast: [BLOCK_M, BLOCK_N], or with a third axis of
    window taps (the vector form) [BLOCK_M, BLOCK_N, 1] against taps [1, 1, KV]."""

    def __init__(self, kernel: Kernel) -> None:
        self.tile = is_tile(kernel)
        self.vector = is_vector(kernel)

    def full(self) -> str:
        if not self.tile:
            return "[BLOCK]"
        return "[BLOCK_M, BLOCK_N, 1]" if self.vector else "[BLOCK_M, BLOCK_N]"

    def rows(self, name: str) -> str:
        return f"{name}[:, None, None]" if self.vector else f"{name}[:, None]"

    def cols(self, name: str) -> str:
        return f"{name}[None, :, None]" if self.vector else f"{name}[None, :]"


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
    if is_tile(kernel) and nd == 1:
        params.append("ROWS")  # the outer rows of a 1-D pool are the tile's rows
    block = ["WIDE", "WIDE_PLANE", "BLOCK_M", "BLOCK_N"] if is_tile(kernel) else ["WIDE", "BLOCK"]
    block += ["KV"] if is_vector(kernel) else []
    if regions.adaptive:
        return params + [f"KMAX{j}" for j in range(nd)], block
    constexprs = [f"{c}{j}" for c in ("KS", "ST", "PD") for j in range(nd)]
    if regions.kind == "max":
        constexprs += [f"DL{j}" for j in range(nd)]
    else:
        constexprs += ["COUNT_PAD", "DIVISOR"]
    return params, constexprs + block


def emit_kernel(w: Writer, kernel: Kernel, name: str) -> None:
    kernel = _renamed(kernel)
    regions = Regions(kernel)
    nd = regions.nd
    params, constexprs = _params(kernel, regions)
    kernel_header(w, kernel, name, params, constexprs)
    w.indent()
    if is_tile(kernel):
        _tile_positions(w, regions, Shape(kernel))
    else:
        _flat_positions(w, regions)
    if regions.split_outer():
        w("odr = outer")
        for d in reversed(range(regions.n_outer)):
            w(f"od{d} = odr % SZ{d}")
            w(f"odr = odr // SZ{d}")
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
    _pooled(w, regions, body)
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
            w("oi0 = outer % OUT0")
            w("outer = outer // OUT0")
            w("if WIDE_PLANE:")
            w("    oi0 = oi0.to(tl.int64)")
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
    value = body.arg(regions.pool.args[0])
    if max_pool:
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
    for _ in range(nd):
        w.dedent()


def _pooled(w: Writer, regions: Regions, body: BodyEmitter) -> None:
    """The pool op's value (and index) after the loops."""
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


# --------------------------------------------------------------------------------------------------
# the launcher
# --------------------------------------------------------------------------------------------------

def emit_helpers(w: Writer) -> None:
    """Module-level helpers every pool launcher uses: argument tuples and PyTorch's output length."""
    w()
    w("def _pool_tuple(value, nd):")
    w('    """A pooling argument (one int, or one or nd of them) as a tuple of nd."""')
    w("    values = tuple(value) if isinstance(value, tuple | list) else (value,)")
    w("    return values * nd if len(values) == 1 else values")
    w()
    w()
    w("def _pool_out(size, kernel, stride, padding, dilation, ceil_mode):")
    w('    """PyTorch\'s pooled length: with ceil_mode, a last window must start inside the input or its')
    w('    left padding."""')
    w("    span = size + 2 * padding - dilation * (kernel - 1) - 1 + (stride - 1 if ceil_mode else 0)")
    w("    out = span // stride + 1")
    w("    if ceil_mode and (out - 1) * stride >= size + padding:")
    w("        out -= 1")
    w("    return out")
    w()


def emit_launcher(w: Writer, kernel: Kernel, name: str, launcher: Launcher) -> None:
    regions = Regions(kernel)
    nd, x, params = regions.nd, kernel.space["input"], kernel.space["params"]
    launcher.begin(w)
    w.indent()
    launcher.contiguous(w)
    w(f"_in = tuple({x}.shape[-{nd}:])")
    kw: list[str] = []
    if regions.adaptive:
        w(f"_out = tuple(i if o is None else o for i, o in zip(_in, _pool_tuple({params}[0], {nd})))")
        w("_kmax = tuple(-(-i // o) + 1 for i, o in zip(_in, _out))  # a window's taps, at most")
    else:
        fields = FIELDS[kernel.space["pool"]]
        w(f"{', '.join('_' + f for f in fields)} = {params}")
        w(f"_k = _pool_tuple(_kernel_size, {nd})")
        w(f"_s = _pool_tuple(_stride, {nd}) if _stride else _k  # no stride: the kernel size")
        w(f"_p = _pool_tuple(_padding, {nd})")
        w(f"_d = _pool_tuple(_dilation, {nd})" if regions.kind == "max" else f"_d = (1,) * {nd}")
        w("_out = tuple(_pool_out(i, k, s, p, d, _ceil_mode) for i, k, s, p, d in zip(_in, _k, _s, _p, _d))")
        kw = [f"{c}{j}={v}[{j}]" for c, v in (("KS", "_k"), ("ST", "_s"), ("PD", "_p")) for j in range(nd)]
        if regions.kind == "max":
            kw += [f"DL{j}=_d[{j}]" for j in range(nd)]
        else:
            kw += ["COUNT_PAD=bool(_count_include_pad)", "DIVISOR=int(_divisor_override or 0)"]
    w(f"shape = (*{x}.shape[:-{nd}], *_out)")
    device = launcher.device()
    for out in kernel.outputs:
        w(f"{out.value} = {output_alloc('shape', out.dtype, device)}")
    w("n = math.prod(shape)")
    kw.append(f"WIDE=max(n, {x}.numel()) > 2**30")  # headroom for a last block and padding
    args = [o.value for o in kernel.operands] + [o.value for o in kernel.outputs] + ["n"]
    if regions.split_outer():
        args.append(f"*{x}.shape[:-{nd}]")
    args += ["*_in", "*_out"]
    cfg = kernel.config
    if is_tile(kernel):
        rows, tile_kw = _tile_grid(w, kernel, nd)
        args += rows
        kw += tile_kw
        kw.append("WIDE_PLANE=max(math.prod(_in), math.prod(_out)) > 2**30")
        if is_vector(kernel):
            # the last dim's taps per step: its window, to a power of two (at most VECTOR_MAX)
            kw.append(f"KV=min(triton.next_power_of_2(_k[-1]), {VECTOR_MAX})")
    elif cfg.get("autotune"):
        w("grid = lambda meta: (triton.cdiv(n, meta['BLOCK']),)")
    else:
        w(f"grid = (triton.cdiv(n, {cfg['BLOCK']}),)")
        kw += [f"BLOCK={cfg['BLOCK']}"]
    if not cfg.get("autotune"):
        kw += [f"num_warps={cfg['num_warps']}"]
    args += ["*_kmax"] if regions.adaptive else []
    for line in wrap_call(f"{name}[grid]", args + kw, "", w.depth):
        w(line)
    launcher.finish(w)
    w.dedent()
    w()


def _tile_grid(w: Writer, kernel: Kernel, nd: int) -> tuple[list[str], list[str]]:
    """The tile form's grid, planes x row blocks x column blocks (flat); the launch's extra
    (positional, keyword) arguments."""
    w("_cols = max(_out[-1], 1)")
    w("_rows = _out[-2]" if nd > 1 else "_rows = n // _cols  # a 1-D pool's rows: its outer dims")
    w("_planes = n // max(_rows * _cols, 1)")
    if kernel.config.get("autotune"):
        w("grid = lambda meta: (_planes * triton.cdiv(_rows, meta['BLOCK_M']) * "
          "triton.cdiv(_cols, meta['BLOCK_N']),)")
        return ["_rows"] if nd == 1 else [], []
    cfg = kernel.config
    w(f"grid = (_planes * triton.cdiv(_rows, {cfg['BLOCK_M']}) * triton.cdiv(_cols, {cfg['BLOCK_N']}),)")
    return ["_rows"] if nd == 1 else [], [f"BLOCK_M={cfg['BLOCK_M']}", f"BLOCK_N={cfg['BLOCK_N']}"]


def tuning_space(kernel: Kernel) -> list[dict]:
    """Autotune candidates: the current config first, then blocks (or tiles) and warps around it."""
    if is_tile(kernel):
        keys, menu = ["BLOCK_M", "BLOCK_N"], [(m, n, nw) for (m, n) in TILES[min(kernel.space["nd"], 2)]
                                               for nw in (4, 8)]
        current = {"BLOCK_M": kernel.config["BLOCK_M"], "BLOCK_N": kernel.config["BLOCK_N"]}
        others = [{"BLOCK_M": m, "BLOCK_N": n, "num_warps": nw} for m, n, nw in menu]
    else:
        keys = ["BLOCK"]
        current = {"BLOCK": kernel.config["BLOCK"]}
        others = [{"BLOCK": b, "num_warps": nw} for b, nw in
                  ((256, 4), (512, 4), (1024, 4), (1024, 8), (128, 2))]
    return autotune_configs([{**current, "num_warps": kernel.config["num_warps"]}] + others, keys)


# --------------------------------------------------------------------------------------------------
# the menu's form steps (steps/apply.py hands `tile` and `vectorize` of a pool kernel here)
# --------------------------------------------------------------------------------------------------

def form_steps(kernel: Kernel) -> list[Strategy]:
    """Steps into the tile form (a few row x column tiles) and its vector taps where they apply;
    steps/menu.py offers them next to the flat form's blocks and the warps."""
    cfg = kernel.config
    current = (cfg.get("BLOCK_M"), cfg.get("BLOCK_N")) if is_tile(kernel) else None
    steps = [Strategy.make("tile", BLOCK_M=m, BLOCK_N=n) for m, n in TILES[min(kernel.space["nd"], 2)]
             if (m, n) != current]
    if vector_ok(kernel) and not is_vector(kernel):
        steps.append(Strategy.make("vectorize"))
    return steps


def configure(kernel: Kernel, strategy: Strategy) -> None:
    """Apply `tile BLOCK=..` (the flat form), `tile BLOCK_M=.. BLOCK_N=..` (the tile form) or
    `vectorize` (the tile form's vector taps) to a pool kernel's config; CoderError where it does
    not apply. BLOCK stays the output elements per program in both forms (steps.programs reads it)."""
    cfg = kernel.config
    args = {k: int(v) for k, v in strategy.params if k != "value"}
    if cfg.get("autotune"):
        raise CoderError("the kernel is autotuned")
    if strategy.kind == "vectorize":
        if not vector_ok(kernel):
            raise CoderError("vector taps need a fixed window and no return_indices")
        if not is_tile(kernel):
            cfg.update(form="tile", BLOCK_M=VECTOR_TILE[0], BLOCK_N=VECTOR_TILE[1],
                       BLOCK=VECTOR_TILE[0] * VECTOR_TILE[1])
        cfg["vector"] = True
    elif strategy.kind == "tile" and set(args) == {"BLOCK"}:
        _require_power_of_two(args.values())
        for key in ("BLOCK_M", "BLOCK_N", "vector"):
            cfg.pop(key, None)
        if "form" in cfg:
            cfg["form"] = "flat"
        cfg["BLOCK"] = args["BLOCK"]
    elif strategy.kind == "tile" and set(args) == {"BLOCK_M", "BLOCK_N"}:
        _require_power_of_two(args.values())
        if args["BLOCK_M"] * args["BLOCK_N"] > 8192:
            raise CoderError("a pool tile of more than 8192 outputs")
        cfg.update(form="tile", BLOCK=args["BLOCK_M"] * args["BLOCK_N"], **args)
    else:
        raise CoderError(f"`{strategy}` does not fit the pool kernel {kernel.name}: it takes "
                         "tile BLOCK=.., tile BLOCK_M=.. BLOCK_N=.. or vectorize")


def _require_power_of_two(values) -> None:
    if any(v < 1 or v & (v - 1) for v in values):
        raise CoderError("pool blocks are powers of two")
