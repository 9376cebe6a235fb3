"""The pool kernel's launcher, module helpers and autotune space (emit/pool.py emits the kernel)."""

from __future__ import annotations

from coders.template.emit import pool_sep, pool_stack
from coders.template.emit.common import Writer
from coders.template.emit.launch import Launcher, autotune_configs, output_alloc, wrap_call
from coders.template.emit.pool_forms import STRIPS, TILES, VECTOR_MAX, is_rows, is_slide, is_tile, is_vector
from coders.template.emit.pool_regions import Regions
from coders.template.emit.pool_shift import is_shift, launch_flag
from coders.template.emit.pool_slide import queue_slots
from coders.template.ir import Kernel
from coders.template.pooling import FIELDS

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
    w()
    w("def _pool_band(rows, columns):")
    w('    """Output rows per program of the rows form: bands enough for about 8192 programs (an H100')
    w('    holds 132 x 16 programs of 4 warps at once), of 16 rows at least (a band re-reads the rows')
    w('    its first window shares with the band before)."""')
    w("    bands = max(1, min(-(-8192 // max(columns, 1)), rows // 16))")
    w("    return max(1, -(-rows // bands))")
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
    if is_rows(kernel) or is_tile(kernel):
        rows, form_kw = _rows_grid(w, kernel, nd) if is_rows(kernel) else _tile_grid(w, kernel, nd)
        args += rows
        kw += form_kw + ["WIDE_PLANE=max(math.prod(_in), math.prod(_out)) > 2**30"]
        if is_shift(kernel):
            kw.append(launch_flag(kernel))
        if pool_stack.is_stack(kernel):
            kw.append("STACK=_stack")
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


def _rows_grid(w: Writer, kernel: Kernel, nd: int) -> tuple[list[str], list[str]]:
    """The rows form's grid, planes x bands x strips (flat), and its extra (positional, keyword)
    launch arguments: BAND (ROWS first in 1-D), and above 1-D the ring's size RING (the window's
    span of rows, to a power of two) and OVERLAP (whether windows share rows: the ring is on)."""
    cfg = kernel.config
    w("_cols = max(_out[-1], 1)")
    w("_rows = _out[-2]" if nd > 1 else "_rows = n // _cols  # a 1-D pool's rows: its outer dims")
    w("_planes = n // max(_rows * _cols, 1)")
    pool_stack.emit_planes(w, kernel, nd)
    # autotuned: the band of the widest strip (narrower ones only give more programs)
    widest = max(n for n, _ in _rows_menu(kernel)) if cfg.get("autotune") else cfg["BLOCK_N"]
    band = cfg.get("BAND") or f"_pool_band(_rows, _planes * triton.cdiv(_cols, {widest}))"
    w(f"_band = {band}")
    strips = "triton.cdiv(_cols, meta['BLOCK_N'])" if cfg.get("autotune") else \
        f"triton.cdiv(_cols, {cfg['BLOCK_N']})"
    grid = f"(_planes * triton.cdiv(_rows, _band) * {strips},)"
    w(f"grid = lambda meta: {grid}" if cfg.get("autotune") else f"grid = {grid}")
    args = (["_rows"] if nd == 1 else []) + ["_band"]
    kw = [] if cfg.get("autotune") else [f"BLOCK_N={cfg['BLOCK_N']}"]
    if is_slide(kernel):
        kw.append(f"STEP={int(cfg['slide'])}")
        if nd > 1:
            w("_span = (_k[-2] - 1) * _d[-2] + 1")
            w(f"_slide = _s[-2] < _span <= {queue_slots(kernel)}  # windows share rows and fit the queue")
            kw.append("SLIDE=_slide")
            kw += [pool_sep.launch_flag(kernel)] if pool_sep.is_sep(kernel) else []
        return args, kw
    if nd > 1:
        span = "(_k[-2] - 1) * _d[-2] + 1"
        w(f"_overlap = _s[-2] < {span}  # windows share rows: keep them in the ring")
        kw += [f"RING=triton.next_power_of_2({span}) if _overlap else 1", "OVERLAP=_overlap"]
    return args, kw


def _rows_menu(kernel: Kernel) -> list[tuple[int, int]]:
    """The rows form's autotune candidates: (strip, warps)."""
    return [(n, nw) for n in STRIPS[min(kernel.space["nd"], 2)] for nw in (4, 8)]


def tuning_space(kernel: Kernel) -> list[dict]:
    """Autotune candidates: the current config first, then blocks (or tiles) and warps around it."""
    if is_rows(kernel):
        keys, current = ["BLOCK_N"], {"BLOCK_N": kernel.config["BLOCK_N"]}
        others = [{"BLOCK_N": n, "num_warps": nw} for n, nw in _rows_menu(kernel)]
    elif is_tile(kernel):
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
