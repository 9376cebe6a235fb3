"""Kernels that walk one dim of their input with a carry: scans (cumsum, cumprod, reversed or
exclusive) and arg-reductions (argmax, argmin). Traced and lowered in coders/template/scans.py.

The input is viewed as (outer, n_walk, inner). When the walked dim is the last (a row kernel) each
program owns one row and walks it in chunks of BLOCK; otherwise (a column kernel) each program owns
BLOCK_N inner columns of one outer index and walks BLOCK_M positions at a time. The body's
elementwise ops before the walk op (a fused prologue, masked cumsum's `x * mask`) run on each chunk
as it is loaded.

Scans combine each chunk's tl.cumsum / tl.cumprod with the carry, the total of the chunks before
it; the chunk's last scanned value is the next carry. Output k of a reverse scan is at position
n_walk - 1 - k, and an exclusive scan's output k reads position k - 1 (the identity at k = 0): the
scan runs in order k either way, and nothing is flipped or shifted in memory.

Arg-reductions keep, per lane, the best value seen and its position: a later position replaces it
only with a strictly better value, so each lane holds its first best. The lanes then meet on the
smallest position holding the overall best: PyTorch's first index. NaN is the best value there is,
as in PyTorch (the first NaN wins).
"""

from __future__ import annotations

from coders.template.emit.common import (
    Axis,
    BodyEmitter,
    FusionError,
    Writer,
    address,
    axis_loader,
    covered_axes,
    mask_of,
    ptr,
    var,
)
from coders.template.emit.launch import Launcher, autotune_configs, kernel_header, output_alloc, wrap_call
from coders.template.emit.reduce import reduced_shape
from coders.template.ir import Kernel, Op
from coders.template.scans import SCANS, WALK_OPS

_IDENTITY = {"cumsum": "0.0", "cumprod": "1.0"}
_SCAN = {"cumsum": ("tl.cumsum", "+"), "cumprod": ("tl.cumprod", "*")}
# an arg-reduction's start value, its "strictly better" test and the reduction that finds the best
_ARG = {"argmax": ('float("-inf")', ">", "tl.max"), "argmin": ('float("inf")', "<", "tl.min")}


def is_row(kernel: Kernel) -> bool:
    """The walked dim is the last: one program per row."""
    return kernel.space["dim"] == len(kernel.space["traced"]) - 1


def walk_op(kernel: Kernel) -> Op:
    return kernel.body[-1]


def _axes(kernel: Kernel, position: str, mask: str) -> list[Axis]:
    """The space's axes, the walked dim indexed by `position` (in range where `mask`)."""
    d, rank = kernel.space["dim"], len(kernel.space["traced"])
    if is_row(kernel):
        return [Axis(list(range(d)), "row", "n_rows", None), Axis([d], position, "n_walk", mask)]
    return [Axis(list(range(d)), "outer", "n_outer", None), Axis([d], position, "n_walk", mask),
            Axis(list(range(d + 1, rank)), "inner", "n_inner", "inner_mask")]


def check(kernel: Kernel) -> None:
    """One walk op, last in the body (what comes before it is a prologue), and the only output."""
    walks = [i for i, op in enumerate(kernel.body) if op.op in WALK_OPS]
    if walks != [len(kernel.body) - 1]:
        raise FusionError("a scan or arg-reduction kernel takes elementwise ops before its walk only")
    if any(out.src != walk_op(kernel).out for out in kernel.outputs):
        raise FusionError("a scan or arg-reduction kernel writes its walk's result only")
    axes = _axes(kernel, "pos", "in_walk")
    for o in kernel.operands:
        covered_axes(axes, o.dims, f"operand {o.value}")
    for out in kernel.outputs:
        covered_axes(axes, out.dims, f"output {out.value}")


def _sizes(kernel: Kernel) -> list[str]:
    return ["n_walk"] if is_row(kernel) else ["n_walk", "n_inner"]


def emit_kernel(w: Writer, kernel: Kernel, name: str) -> None:
    check(kernel)
    row = is_row(kernel)
    params = [var(o.value) if o.scalar else ptr(o.value) for o in kernel.operands] + \
        [ptr(o.value) for o in kernel.outputs] + _sizes(kernel)
    kernel_header(w, kernel, name, params, ["BLOCK"] if row else ["BLOCK_M", "BLOCK_N"], key=_sizes(kernel))
    w.indent()
    if row:
        w("row = tl.program_id(0).to(tl.int64)")
        w("lane = tl.arange(0, BLOCK)")
    else:
        w("pid = tl.program_id(0)")
        w("n_inner_blocks = tl.cdiv(n_inner, BLOCK_N)")
        w("outer = (pid // n_inner_blocks).to(tl.int64)")
        w("inner = (pid % n_inner_blocks) * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]")
        w("inner_mask = inner < n_inner")
        w("lane = tl.arange(0, BLOCK_M)[:, None]")
    if walk_op(kernel).op in SCANS:
        _scan(w, kernel)
    else:
        _arg_reduction(w, kernel)
    w.dedent()
    w()


def _prologue(w: Writer, kernel: Kernel, axes: list[Axis]) -> str:
    """The body up to the walk op, on the chunk just loaded; returns the value walked."""
    body = BodyEmitter(kernel, axis_loader(axes))
    for op in kernel.body[:-1]:
        w(body.statement(op))
    return body.arg(walk_op(kernel).args[0])


def _scan(w: Writer, kernel: Kernel) -> None:
    row = is_row(kernel)
    op = walk_op(kernel).op
    block = "BLOCK" if row else "BLOCK_M"
    identity = _IDENTITY[op]
    scan_fn, combine = _SCAN[op]
    reverse, exclusive = kernel.space.get("reverse"), kernel.space.get("exclusive")
    keep = "" if row else ", keep_dims=True"
    w(f"carry = tl.full({'[]' if row else '[1, BLOCK_N]'}, {identity}, tl.float32)  "
      "# the chunks before this one, combined")
    w(f"for start in range(0, n_walk, {block}):")
    w.indent()
    w("k = start + lane  # the k-th output of the scan")
    w("out_mask = k < n_walk")
    w("at = n_walk - 1 - k  # a reverse scan runs from the end" if reverse else "at = k")
    if exclusive:
        w("src = k - 1  # exclusive: output k combines the inputs before it")
        w("in_walk = (src >= 0) & out_mask")
    else:
        w("src = k")
        w("in_walk = out_mask")
    w("pos = n_walk - 1 - src" if reverse else "pos = src")
    value = _prologue(w, kernel, _axes(kernel, "pos", "in_walk"))
    mask = "in_walk" if row else "in_walk & inner_mask"
    w(f"v = tl.where({mask}, {value}, {identity})")
    w(f"scanned = carry {combine} {scan_fn}(v, axis=0)")
    out_axes = _axes(kernel, "at", "out_mask")
    for out in kernel.outputs:
        where = address(out_axes, out.dims, out.value)
        store_mask = mask_of(out_axes, out.dims, out.value)
        w(f"tl.store({ptr(out.value)} + {where}, scanned.to({ptr(out.value)}.dtype.element_ty), "
          f"mask={store_mask})")
    w(f"carry = tl.sum(tl.where(lane == {block} - 1, scanned, 0.0), axis=0{keep})  # the last scanned value")
    w.dedent()


def _arg_reduction(w: Writer, kernel: Kernel) -> None:
    row = is_row(kernel)
    op = walk_op(kernel).op
    block = "BLOCK" if row else "BLOCK_M"
    start_value, better, best_of = _ARG[op]
    tile = "[BLOCK]" if row else "[BLOCK_M, BLOCK_N]"
    keep = "" if row else ", keep_dims=True"
    w(f"best = tl.full({tile}, {start_value}, tl.float32)")
    w(f"best_at = tl.zeros({tile}, tl.int32) + n_walk  # n_walk: nothing seen yet")
    w(f"for start in range(0, n_walk, {block}):")
    w.indent()
    w("pos = start + lane")
    w("in_walk = pos < n_walk")
    axes = _axes(kernel, "pos", "in_walk")
    value = _prologue(w, kernel, axes)
    w(f"v = {value}")
    w("# a later position wins only with a strictly better value (each lane keeps its first best);")
    w("# NaN beats every number, and the first NaN stays")
    mask = "in_walk" if row else "in_walk & inner_mask"
    w(f"take = {mask} & ((v {better} best) | (best_at == n_walk) | ((v != v) & (best == best)))")
    w("best = tl.where(take, v, best)")
    w("best_at = tl.where(take, pos, best_at)")
    w.dedent()
    w("# the lanes meet: the smallest position that holds the best value (a NaN if there is one)")
    w("seen = best_at < n_walk")
    w("is_nan = seen & (best != best)")
    w(f"any_nan = tl.max(is_nan.to(tl.int32), axis=0{keep}) > 0")
    w(f'top = {best_of}(tl.where(seen & (best == best), best, {start_value}), axis=0{keep})')
    w("hit = seen & tl.where(any_nan, is_nan, best == top)")
    w(f"index = tl.min(tl.where(hit, best_at, n_walk), axis=0{keep})")
    for out in kernel.outputs:
        where = address(axes, out.dims, out.value)
        store_mask = mask_of(axes, out.dims, out.value)
        target = ptr(out.value) if where == "0" else f"{ptr(out.value)} + {where}"
        w(f"tl.store({target}, index.to({ptr(out.value)}.dtype.element_ty)" +
          (f", mask={store_mask})" if store_mask else ")"))


# --------------------------------------------------------------------------------------------------
# launcher
# --------------------------------------------------------------------------------------------------

def _prod(x: str, a: int, b: int) -> str:
    if a == b:
        return "1"
    if b - a == 1:
        return f"{x}.shape[{a}]"
    return f"math.prod({x}.shape[{a}:{b}])"


def emit_launcher(w: Writer, kernel: Kernel, name: str, launcher: Launcher) -> None:
    x, d = kernel.space["input"], kernel.space["dim"]
    rank = len(kernel.space["traced"])
    cfg = kernel.config
    launcher.begin(w)
    w.indent()
    launcher.contiguous(w)
    device = launcher.device()
    for out in kernel.outputs:
        shape = f"{x}.shape" if kernel.kind == "scan" else reduced_shape(x, d, d + 1, rank, out.keepdim)
        w(f"{out.value} = {output_alloc(shape, out.dtype, device)}")
    w(f"n_walk = {x}.shape[{d}]")
    args = [o.value for o in kernel.operands] + [o.value for o in kernel.outputs] + _sizes(kernel)
    if is_row(kernel):
        w(f"n_rows = {_prod(x, 0, d)}")
        grid = "(n_rows,)"
        blocks = [f"BLOCK=min(triton.next_power_of_2(n_walk), {cfg['BLOCK']})"]
    else:
        w(f"n_outer = {_prod(x, 0, d)}")
        w(f"n_inner = {_prod(x, d + 1, rank)}")
        grid = f"(n_outer * triton.cdiv(n_inner, {cfg['BLOCK_N']}),)"
        if cfg.get("autotune"):
            grid = "lambda meta: (n_outer * triton.cdiv(n_inner, meta['BLOCK_N']),)"
        blocks = [f"BLOCK_M=min(triton.next_power_of_2(n_walk), {cfg['BLOCK_M']})",
                  f"BLOCK_N={cfg['BLOCK_N']}"]
    w(f"grid = {grid}")
    kw = [] if cfg.get("autotune") else blocks + [f"num_warps={cfg['num_warps']}"]
    for line in wrap_call(f"{name}[grid]", args + kw, "", w.depth):
        w(line)
    launcher.finish(w)
    w.dedent()
    w()


def tuning_space(kernel: Kernel) -> list[dict]:
    cfg = kernel.config
    if is_row(kernel):
        keys = ["BLOCK", "num_warps"]
        menu = [(256, 2), (512, 4), (1024, 4), (2048, 8), (4096, 8)]
    else:
        keys = ["BLOCK_M", "BLOCK_N", "num_warps"]
        menu = [(16, 64, 4), (32, 64, 4), (64, 32, 4), (32, 128, 4), (64, 128, 8)]
    current = {k: cfg[k] for k in keys}
    return autotune_configs([current] + [dict(zip(keys, m, strict=True)) for m in menu], keys)
