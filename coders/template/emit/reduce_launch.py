"""The reduce kernel's launcher and autotune space (emit/reduce.py emits the kernel): output
allocation, the extents a launch reads, the block a row is walked in, and the grid."""

from __future__ import annotations

from coders.template.emit.common import REDUCTIONS, Writer, pow2_at_least
from coders.template.emit.launch import Launcher, autotune_configs, output_alloc, wrap_call
from coders.template.emit.pointwise import spread_single_value
from coders.template.emit.reduce_analysis import analyse, full_size_outputs, writes_by_channel
from coders.template.emit.reduce_kernel import build
from coders.template.emit.reduce_layout import Layout, chunk_of
from coders.template.emit.reduce_norm_split import stats_name, stats_operands, workspace_slots
from coders.template.emit.reduce_split import combine_name, combine_ops, emit_split, reduces_in_slices
from coders.template.ir import Kernel

# a full-size output reads its row twice unless the row stays in registers: log_softmax_vocab
# (32003 fp32 columns, H200) took 1.02 ms held in one block of 32768 (32 warps), 1.52 ms in chunks
ONE_PASS_FULL = 32768

# the most values a program's [ROWS, BLOCK] tile of short rows holds (config ROWS): as many as the
# widest single row the warp rule below gives 16 warps
ROW_TILE = 16384

# a split reduction's combine kernel reads its workspace in [SLICES, BLOCK] tiles of COMBINE_TILE
# partials, at most COMBINE_SLICES slices a tile (a loop walks more): a full reduction split 264 ways
# reads 32 slices a load, not one (unrolled, SPLIT loads of one value each)
COMBINE_TILE = 4096
COMBINE_SLICES = 32


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


def row_blocks(kernel: Kernel) -> tuple[int, int]:
    """(the longest row kept in one block, the chunk a longer row is walked in). A `tile` step
    sets both to its BLOCK; until then they follow the kernel's form (`auto_block`)."""
    cfg = kernel.config
    if not cfg.get("auto_block"):
        return cfg["BLOCK"], cfg["BLOCK"]
    lay = Layout(kernel)
    varies, _, _ = analyse(kernel, lay)
    rows = [o for o in kernel.operands if not o.scalar and set(o.dims) & set(lay.red_dims)]
    full = bool(full_size_outputs(kernel, varies))
    one_pass = ONE_PASS_FULL if full and len(rows) == 1 and not lay.groups else cfg["BLOCK"]
    chunk = chunk_of(cfg, lay.online)
    return max(one_pass, chunk), chunk


def emit_launcher(w: Writer, kernel: Kernel, name: str, launcher: Launcher) -> None:
    lay = Layout(kernel)
    x = kernel.space["input"]
    launcher.begin(w)
    w.indent()
    launcher.contiguous(w)
    for o in kernel.operands:  # read through a spread address: dense over its dims (pointwise.py)
        if not o.scalar and lay.spreads(o.dims):
            spread_single_value(w, o.value, o.dims, f"{x}.shape")
    device = launcher.device()
    for out in kernel.outputs:
        shape = f"{x}.shape" if out.dims == list(range(lay.rank)) else \
            reduced_shape(x, lay.d0, lay.d1, lay.rank, out.keepdim)
        w(f"{out.value} = {output_alloc(shape, out.dtype, device)}")
    args = [o.value for o in kernel.operands] + [o.value for o in kernel.outputs]
    if kernel.config.get("split_k", 1) > 1 and reduces_in_slices(kernel):
        launch_split(w, kernel, name, lay, device)
    elif kernel.config.get("split_k", 1) > 1:
        launch_norm_split(w, kernel, name, lay, device)
    elif lay.column:
        _launch_columns(w, kernel, name, lay, args)
    else:
        _launch_rows(w, kernel, name, lay, args, device)
    launcher.finish(w)
    w.dedent()
    w()


def _column_sizes(w: Writer, x: str, lay: Layout) -> None:
    """A column reduction's (outer, reduced, inner) extents."""
    w(f"n_outer = {_prod(x, 0, lay.d0)}")
    w(f"n_red = {_prod(x, lay.d0, lay.d1)}")
    w(f"n_inner = {_prod(x, lay.d1, lay.rank)}")


def _launch_columns(w: Writer, kernel: Kernel, name: str, lay: Layout, args: list[str]) -> None:
    """A program per (outer index, block of BLOCK_N inner columns), walking the reduced rows."""
    cfg = kernel.config
    _column_sizes(w, kernel.space["input"], lay)
    w(f"BLOCK_M = min(triton.next_power_of_2(n_red), {cfg['BLOCK_M']})")
    launch = args + build(kernel, 1)[2]
    _spans(w, kernel.space["input"], launch)
    if cfg.get("autotune"):
        w("grid = lambda meta: (n_outer * triton.cdiv(n_inner, meta['BLOCK_N']),)")
        w(f"{name}[grid]({', '.join(launch + ['BLOCK_M=BLOCK_M', 'ONE_PASS=n_red <= BLOCK_M'])})")
    else:
        w(f"grid = (n_outer * triton.cdiv(n_inner, {cfg['BLOCK_N']}),)")
        kw = ["BLOCK_M=BLOCK_M", f"BLOCK_N={cfg['BLOCK_N']}", "ONE_PASS=n_red <= BLOCK_M",
              f"num_warps={cfg['num_warps']}"]
        for line in _call(w, f"{name}[grid]", launch + kw):
            w(line)


def _launch_rows(w: Writer, kernel: Kernel, name: str, lay: Layout, args: list[str], device: str) -> None:
    """A program per row (or a persistent set of programs striding over the rows)."""
    cfg = kernel.config
    _row_sizes(w, kernel.space["input"], lay)
    one_pass, chunk = row_blocks(kernel)
    if one_pass > chunk:
        w(f"# a row of up to {one_pass} values stays in registers and is read once; "
          f"a longer one is walked in chunks")
        w(f"BLOCK = triton.next_power_of_2(n_cols) if n_cols <= {one_pass} else {chunk}")
    else:
        w(f"BLOCK = min(triton.next_power_of_2(n_cols), {chunk})")
    launch = args + build(kernel, 1)[2]
    _spans(w, kernel.space["input"], launch)
    kw = ["BLOCK=BLOCK", "ONE_PASS=n_cols <= BLOCK"]
    if writes_by_channel(kernel, lay):
        kw.append("BY_CHANNEL=2 * HW >= BLOCK")  # a channel fills at least half a chunk
    if lay.rows > 1:
        _rows_per_program(w, lay.rows)
        kw.insert(1, "ROWS=ROWS")
    if cfg.get("persistent"):
        w("grid = (min(n_rows, 2 * _num_programs(" + device + ")),)")
    elif lay.rows > 1:
        w("grid = (triton.cdiv(n_rows, ROWS),)")
    else:
        w("grid = (n_rows,)")
    if not cfg.get("autotune"):
        kw += _row_options(w, cfg, "ROWS * BLOCK" if lay.rows > 1 else "BLOCK")
    for line in _call(w, f"{name}[grid]", launch + kw):
        w(line)


def _row_sizes(w: Writer, x: str, lay: Layout) -> None:
    """The number of rows and their length; GroupNorm's rows are (batch, group) pairs."""
    if lay.groups:
        w(f"G = {lay.groups}")
        w(f"CPG = {x}.shape[1] // G")
        w(f"HW = {_prod(x, 2, lay.rank)}")
        w(f"n_rows = {x}.shape[0] * G")
        w("n_cols = CPG * HW")
    else:
        w(f"n_rows = {_prod(x, 0, lay.d0)}")
        w(f"n_cols = {_prod(x, lay.d0, lay.d1)}")
        if lay.tail is not None:  # operands that span the rows' trailing dims (reduce_layout.py)
            w(f"n_tail = {_prod(x, lay.tail, lay.d0)}")


def _spans(w: Writer, x: str, sizes: list[str]) -> None:
    """The span_<a>_<b> sizes a kernel reads (reduce_layout.py: operands that span part of an axis)."""
    for s in sizes:
        if s.startswith("span_"):
            a, b = (int(part) for part in s.split("_")[1:])
            w(f"{s} = {_prod(x, a, b)}")


def _rows_per_program(w: Writer, rows: int) -> None:
    """ROWS for the launch: the config's in one pass, at most ROW_TILE values a tile; 1 for a row
    walked in chunks (the kernel's looped form takes one row per program)."""
    w(f"# short rows share a program: {rows} rows (at most {ROW_TILE} values) as one [ROWS, BLOCK] tile")
    w(f"ROWS = min({rows}, max({ROW_TILE} // BLOCK, 1)) if n_cols <= BLOCK else 1")


def _row_options(w: Writer, cfg: dict, tile: str) -> list[str]:
    """The launch options of a row kernel that is not autotuned; `tile` counts a program's values."""
    kw = []
    if cfg.get("num_warps"):
        kw.append(f"num_warps={cfg['num_warps']}")
    else:
        w("# wide rows get more warps so each thread keeps a few elements in registers")
        w(f"num_warps = 32 if {tile} > 16384 else min(max({tile} // 256, 1), 16)")
        kw.append("num_warps=num_warps")
    if cfg.get("num_stages"):
        kw.append(f"num_stages={cfg['num_stages']}")
    return kw


def launch_split(w: Writer, kernel: Kernel, name: str, lay: Layout, device: str) -> None:
    """A split reduction's workspace, its partial kernel over (rows, SPLIT) and its combine kernel."""
    x = kernel.space["input"]
    cfg = kernel.config
    split = cfg["split_k"]
    reds = [op for op in kernel.body if op.op in REDUCTIONS]
    if lay.column:
        _column_sizes(w, x, lay)
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
    sizes_a, sizes_c = emit_split(Writer(), kernel, name)
    _spans(w, x, list(dict.fromkeys(sizes_a + sizes_c)))
    first = [o.value for o in kernel.operands] + ["ws", "n_reduced"] + sizes_a
    kw = consts + [f"SPLIT={split}"] + [f"{k}={cfg[k]}" for k in ("num_warps", "num_stages") if cfg.get(k)]
    for line in _call(w, f"{name}[({grid}, {split})]", first + kw):
        w(line)
    ops = combine_ops(kernel)
    loaded = sorted({op.args[0] for op in ops if op.op == "load"})
    second = ["ws"] + [kernel.operands[i].value for i in loaded] + [o.value for o in kernel.outputs] + \
        ["n_reduced"] + sizes_c
    slices = combine_slices(split)
    block = COMBINE_TILE // slices
    for line in _call(w, f"{combine_name(name)}[(triton.cdiv(n_reduced, {block}),)]",
                      second + [f"SPLIT={split}", f"SLICES={slices}", f"BLOCK={block}"]):
        w(line)


def launch_norm_split(w: Writer, kernel: Kernel, name: str, lay: Layout, device: str) -> None:
    """A split normalization's workspace, its statistics kernel and its normalize kernel, each over
    (rows, SPLIT) programs (reduce_norm_split.py)."""
    x, cfg = kernel.space["input"], kernel.config
    split = cfg["split_k"]
    w(f"n_rows = {_prod(x, 0, lay.d0)}")
    w(f"n_cols = {_prod(x, lay.d0, lay.d1)}")
    w(f"BLOCK = min(triton.next_power_of_2(n_cols), {chunk_of(cfg, lay.online)})")
    w(f"# {split} programs share each row: each writes its slice's statistics, then each merges its")
    w("# row's statistics and writes its slice of the outputs")
    w(f"ws = torch.empty(({workspace_slots(kernel)}, {split}, n_rows), device={device}, dtype=torch.float32)")
    kw = ["BLOCK=BLOCK", f"SPLIT={split}"] + _row_options(w, cfg, "BLOCK")
    first = [kernel.operands[i].value for i in stats_operands(kernel)] + ["ws", "n_rows", "n_cols"]
    for line in _call(w, f"{stats_name(name)}[(n_rows, {split})]", first + kw):
        w(line)
    slices = pow2_at_least(split)  # the normalize kernel loads its row's partials at once
    second = [o.value for o in kernel.operands + kernel.outputs] + ["ws", "n_rows", "n_cols"]
    for line in _call(w, f"{name}[(n_rows, {split})]", second + kw[:2] + [f"SLICES={slices}"] + kw[2:]):
        w(line)


def combine_slices(split: int) -> int:
    """The slices the combine kernel reads at once: SPLIT rounded up to a power of two, at most
    COMBINE_SLICES; its tile is [slices, COMBINE_TILE // slices]."""
    return min(pow2_at_least(split), COMBINE_SLICES)


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
