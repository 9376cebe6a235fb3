"""A conv kernel that pools its output (fuse/pooled.py merges a non-overlapping max / avg pool into it).

The gemm form's rows are pooled pixels (image, pooled position), M = N x pooled pixels; the launcher
passes the pooled sizes as `out_<dim>` and the pool's kernel as constexprs PK0, PK1, ... For each
window position (a loop over PK0 x PK1 x ...) the program computes the conv tile at that conv output
pixel, `pooled position * PK + offset`, with the K loop as it is (taps or flat, NC* or channels last,
TF32 rounding), applies the epilogue ops before the pool to it and folds it into a running max
(NaN wins, as in PyTorch) or sum (divided by the window after the loop). The ops after the pool
(elementwise, a reduction over the channels) run on the pooled tile, and only it is stored: 1/window
of the conv's stores, the same FLOPs. Conv output pixels the pool's floor mode drops are never
computed.

The body splits around its `pool` op: the ops that do not read the accumulator (operand loads, ops
on them) run once before the loop, the ops between the accumulator and the pool in it, the rest
after it. An operand read before the pool is addressed at the pooled pixel, so one spanning the
spatial dims (a full-size tensor at the conv's resolution) is refused (`check`).
"""

from __future__ import annotations

from collections.abc import Callable

from coders.template.emit.common import (
    Axis,
    FusionError,
    Writer,
    needed,
    store_outputs,
    tile_body,
    var,
)
from coders.template.ir import Kernel, Op
from coders.template.pooling import FIELDS


def pools(kernel: Kernel) -> bool:
    return kernel.kind == "conv" and "pool" in kernel.space


def split(kernel: Kernel) -> tuple[Op, list[Op], list[Op], list[Op]]:
    """(the pool op, the ops before the window loop, in it, after it); raises FusionError for a body
    the loop cannot run."""
    pool_ops = [op for op in kernel.body if op.op == "pool"]
    if len(pool_ops) != 1:
        raise FusionError("a pooling conv's body pools once")
    pool = pool_ops[0]
    tile: set[str] = set()  # values read from the accumulator, at the conv's resolution or pooled
    after: set[str] = set()  # values read from the pool
    for op in kernel.body:
        args = {a for a in op.args if isinstance(a, str)}
        if op.op == "acc" or args & tile:
            tile.add(op.out)
        if op is pool or args & after:
            after.add(op.out)
    windowed = {op.out for op in needed(kernel.body, [pool.args[0]])}
    if tile - after - windowed:
        raise FusionError("a pooling conv writes pooled values only, not the conv's output")
    post = [op for op in kernel.body if op.out in after and op is not pool]
    if any(a in tile - after for op in post for a in op.args if isinstance(a, str)):
        raise FusionError("an op after the pool reads the conv's unpooled tile")
    before = [op for op in kernel.body if op.out not in tile]
    inside = [op for op in kernel.body if op.out in tile - after]
    return pool, before, inside, post


def check(kernel: Kernel) -> None:
    """Raise FusionError for a pooling conv unless every output is pooled and no operand the window
    loop reads spans the conv's spatial dims (it would be read at the pooled pixel)."""
    if not pools(kernel):
        return
    spatial_dims = set(range(2, len(kernel.space["traced"])))
    pool, _, _, post = split(kernel)
    if any(o.src not in {op.out for op in post} | {pool.out} for o in kernel.outputs):
        raise FusionError("a pooling conv writes pooled values only")
    for op in needed(kernel.body, [pool.args[0]]):
        if op.op == "load" and set(kernel.operands[op.args[0]].dims) & spatial_dims:
            raise FusionError(f"operand {kernel.operands[op.args[0]].value} is read at the conv's resolution "
                              "before the pool: a pooling conv addresses operands at the pooled pixel")


def constexprs(kernel: Kernel) -> list[str]:
    """The pool's kernel size along each spatial dim, PK0, PK1, ... (none where it does not pool)."""
    return [f"PK{j}" for j in range(len(kernel.space["traced"]) - 2)] if pools(kernel) else []


def pooled_pixels(w: Writer, dims: list[str]) -> None:
    """Each row's image and pooled position po_<dim> (out_<dim> are the pooled sizes)."""
    w("# rows are pooled pixels: (image, pooled position)")
    w("rest = rows")
    for s in reversed(dims):
        w(f"po_{s} = rest % out_{s}")
        w(f"rest = rest // out_{s}")
    w("img = rest.to(tl.int64)")


def emit_windows(w: Writer, kernel: Kernel, dims: list[str], conv_tile: Callable[[], None],
                 epilogue: tuple[list[Axis], Axis | None]) -> None:
    """The window loop (conv tile, the ops before the pool, the running max / sum), the ops after
    the pool and the stores; `conv_tile` writes the conv tile `acc` at the pixels o_<dim>, `epilogue`
    is emit/conv.py's epilogue axes and the channels' axis if it reduces them."""
    pool, before, inside, post = split(kernel)
    axes, columns = epilogue
    body = tile_body(kernel, axes, columns)
    body.emit(w, before)
    window = " * ".join(constexprs(kernel))
    is_max = kernel.space["pool"]["op"] == "max"
    init = 'float("-inf")' if is_max else "0.0"
    w(f"pool_acc = tl.full((BLOCK_M, BLOCK_N), {init}, tl.float32)")
    w(f"for win in range(0, {window}):  # the window's positions: one conv tile each")
    w.indent()
    w("rest_w = win")
    for j in reversed(range(len(dims))):
        s = dims[j]
        w(f"o_{s} = po_{s} * PK{j} + rest_w % PK{j}  # the conv output pixel")
        if j > 0:
            w(f"rest_w = rest_w // PK{j}")
    conv_tile()
    body.emit(w, inside)
    value = body.arg(pool.args[0])
    if is_max:
        w(f"pool_acc = tl.where(({value} > pool_acc) | ({value} != {value}), {value}, pool_acc)  # NaN wins")
    else:
        w(f"pool_acc += {value}")
    w.dedent()
    w(f"{var(pool.out)} = pool_acc" + ("" if is_max else f" / ({window})"))
    body.types[pool.out] = "f"
    body.emit(w, post)
    store_outputs(w, kernel, axes, body, columns)


def launch(w: Writer, kernel: Kernel, dims: list[str]) -> list[str]:
    """Read the pool's parameters at run time, check its windows still tile the conv output and make
    out_<dim> the pooled sizes; the launch's PK<j> arguments."""
    sp, nd = kernel.space, len(dims)
    w(f"{', '.join('_' + f for f in FIELDS[sp['pool']['op']])} = {sp['params']}")
    w(f"_pk = _pool_tuple(_kernel_size, {nd})")
    tests = [f"_pool_tuple(_stride or _kernel_size, {nd}) == _pk", f"not any(_pool_tuple(_padding, {nd}))",
             "not _ceil_mode"]
    tests.append(f"_pool_tuple(_dilation, {nd}) == (1,) * {nd}" if sp["pool"]["op"] == "max" else
                 "_divisor_override is None")
    w(f"_fits = {tests[0]} and {tests[1]}")
    w(f"_fits = _fits and {tests[2]} and {tests[3]}")
    w("assert _fits, 'the fused pool needs stride == kernel_size, no padding or dilation, floor mode'")
    w("# rows are pooled pixels: the conv output pixels the floor mode drops are never computed")
    for i, s in enumerate(dims):
        w(f"out_{s} = out_{s} // _pk[{i}]")
    return [f"PK{j}=_pk[{j}]" for j in range(nd)]
