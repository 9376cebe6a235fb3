"""Pooling kernels: each program owns BLOCK output elements and walks their windows.

The output (outer dims..., OUT0, .., OUT{nd-1}) is flat-indexed like an elementwise kernel's. Along
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

UNROLL = 64  # windows of at most this many taps (at the traced sizes) are unrolled
# the template's own names; body values that match are renamed before emitting
_TEMPLATE = re.compile(r"^(oi|wi|kk|lo|hi|ok|od|IN|OUT|SZ|KS|ST|PD|DL|KMAX)\d+$|^(win|plane)_|^odr$")


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
    if regions.adaptive:
        return params + [f"KMAX{j}" for j in range(nd)], ["WIDE", "BLOCK"]
    constexprs = [f"{c}{j}" for c in ("KS", "ST", "PD") for j in range(nd)]
    if regions.kind == "max":
        constexprs += [f"DL{j}" for j in range(nd)]
    else:
        constexprs += ["COUNT_PAD", "DIVISOR"]
    return params, constexprs + ["WIDE", "BLOCK"]


def emit_kernel(w: Writer, kernel: Kernel, name: str) -> None:
    kernel = _renamed(kernel)
    regions = Regions(kernel)
    nd = regions.nd
    params, constexprs = _params(kernel, regions)
    kernel_header(w, kernel, name, params, constexprs)
    w.indent()
    w("pid = tl.program_id(0)")
    w("# 64-bit index arithmetic only where an offset may pass 2**31: 32-bit divisions are cheaper")
    w("if WIDE:")
    w("    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)")
    w("else:")
    w("    offs = pid * BLOCK + tl.arange(0, BLOCK)")
    w("mask = offs < n")
    w("# the output's position along each pooled dim, then the flat index of the dims before them")
    w("outer = offs")
    for j in reversed(range(nd)):
        w(f"oi{j} = outer % OUT{j}")
        w(f"outer = outer // OUT{j}")
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

    def load(op, operand):
        if operand.scalar:
            return f"{var(operand.value)} * 1.0" if not operand.integer else var(operand.value)
        where = regions.address(operand.dims, region[0])
        if where == "0":
            text = f"tl.load({ptr(operand.value)})"
        else:
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


def _window_loops(w: Writer, kernel: Kernel, regions: Regions, body: BodyEmitter, region: list) -> None:
    """One loop per pooled dim over the window's taps; the innermost folds each tap in."""
    nd, max_pool = regions.nd, regions.kind == "max"
    w("win_acc = tl.full([BLOCK], float(\"-inf\"), tl.float32)" if max_pool else
      "win_acc = tl.zeros([BLOCK], dtype=tl.float32)")
    if regions.index is not None:
        w("win_arg = tl.full([BLOCK], -1, tl.int64)")
    window = kernel.space.get("window")
    loop = "tl.static_range" if window is not None and window <= UNROLL else "range"
    for j in range(nd):
        if regions.adaptive:
            w(f"for kk{j} in range(KMAX{j}):")
            w.indent()
            w(f"wi{j} = lo{j} + kk{j}")
            inside = f"wi{j} < hi{j}"
        else:
            w(f"for kk{j} in {loop}(KS{j}):")
            w.indent()
            w(f"wi{j} = lo{j} + kk{j}" + (f" * DL{j}" if max_pool else ""))
            inside = f"(wi{j} >= 0) & (wi{j} < IN{j})"
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
        if regions.index is not None:
            # PyTorch's test: a larger value or a NaN replaces the running max; the first tap always
            w("win_take = win_valid & ((win_val > win_acc) | (win_val != win_val) | (win_arg < 0))")
            w("win_arg = tl.where(win_take, win_pos, win_arg)")
        else:
            w("win_take = (win_val > win_acc) | (win_val != win_val)")
        w("win_acc = tl.where(win_take, win_val, win_acc)")
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
    args += ["*_in", "*_out"] + (["*_kmax"] if regions.adaptive else [])
    cfg = kernel.config
    if cfg.get("autotune"):
        w("grid = lambda meta: (triton.cdiv(n, meta['BLOCK']),)")
    else:
        w(f"grid = (triton.cdiv(n, {cfg['BLOCK']}),)")
        kw += [f"BLOCK={cfg['BLOCK']}", f"num_warps={cfg['num_warps']}"]
    for line in wrap_call(f"{name}[grid]", args + kw, "", w.depth):
        w(line)
    launcher.finish(w)
    w.dedent()
    w()


def tuning_space(kernel: Kernel) -> list[dict]:
    """Autotune candidates: the current config first, then output blocks and warps around it."""
    current = {"BLOCK": kernel.config["BLOCK"], "num_warps": kernel.config["num_warps"]}
    menu = [current] + [{"BLOCK": b, "num_warps": nw} for b, nw in
                        ((256, 4), (512, 4), (1024, 4), (1024, 8), (128, 2))]
    return autotune_configs(menu, ["BLOCK"])
