"""Elementwise kernels: one flat block of output elements per program.

Operands that broadcast read through per-axis indices: the space's dims are grouped into runs
over which every operand is either present or broadcast, and a run's index is
`(offs // <inner sizes>) % <run size>`.
"""

from __future__ import annotations

from coders.template.emit.common import Axis, BodyEmitter, Writer, address, ptr, triangles, var
from coders.template.emit.launch import Launcher, autotune_configs, kernel_header, output_alloc
from coders.template.ir import Kernel


def runs(kernel: Kernel) -> list[list[int]]:
    """Adjacent space dims grouped so each operand spans whole runs."""
    rank = len(kernel.space["traced"])
    tensors = [o for o in kernel.operands if not o.scalar]
    out: list[list[int]] = []
    previous = None
    for d in range(rank):
        signature = tuple(d in o.dims for o in tensors)
        if out and signature == previous:
            out[-1].append(d)
        else:
            out.append([d])
        previous = signature
    return out


def axes_of(kernel: Kernel) -> list[Axis]:
    groups = runs(kernel)
    return [Axis(dims=g, index=f"i{j}", size=f"size{j}", mask=None) for j, g in enumerate(groups)]


def broadcast_axes(kernel: Kernel, axes: list[Axis], full: list[int]) -> list[int]:
    """The axes whose index an operand that broadcasts reads through (kernel and launcher alike)."""
    return sorted({j for o in kernel.operands if not o.scalar and o.dims and o.dims != full
                   for j, a in enumerate(axes) if set(a.dims) <= set(o.dims)})


def emit_kernel(w: Writer, kernel: Kernel, name: str) -> None:
    axes = axes_of(kernel)
    full = list(range(len(kernel.space["traced"])))
    needed_axes = broadcast_axes(kernel, axes, full)
    sizes = [axes[j].size for j in range(1, len(axes)) if _size_needed(j, needed_axes, axes)]
    params = _params(kernel) + [ptr(o.value) for o in kernel.outputs] + ["n"] + sizes + \
        _triangle_sizes(kernel)
    kernel_header(w, kernel, name, params, ["BLOCK"])
    w.indent()
    w("pid = tl.program_id(0)")
    w("offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)")
    if kernel.config.get("vectorize"):
        w("# every block starts on a multiple of BLOCK and is contiguous: wide loads and stores")
        w("offs = tl.max_contiguous(tl.multiple_of(offs, BLOCK), BLOCK)")
    w("mask = offs < n")
    if needed_axes:
        w("# index along each broadcast axis: operands that broadcast read through these")
        for j in needed_axes:
            inner = [a.size for a in axes[j + 1:]]
            idx = "offs" if not inner else f"offs // {inner[0]}" if len(inner) == 1 else \
                f"offs // ({' * '.join(inner)})"
            if j > 0:
                idx = f"({idx}) % {axes[j].size}" if inner else f"offs % {axes[j].size}"
            w(f"i{j} = {idx}")

    def load(op, operand):
        if operand.scalar:
            return f"{var(operand.value)} * 1.0" if not operand.integer else var(operand.value)
        where = "offs" if operand.dims == full else address(axes, operand.dims, operand.value)
        if where == "0":
            text = f"tl.load({ptr(operand.value)})"
        else:
            text = f"tl.load({ptr(operand.value)} + {where}, mask=mask, other=0)"
        return text if operand.integer else f"{text}.to(tl.float32)"

    body = BodyEmitter(kernel, load)
    if _triangle_sizes(kernel):
        w("# the element's row and column in its matrix (the last two dims), for triu / tril")
        w("tri_row = (offs // tri_cols) % tri_rows")
        w("tri_col = offs % tri_cols")
        body.special.update(triangles(body, "tri_row", "tri_col"))
    for op in kernel.body:
        w(body.statement(op))
    for out in kernel.outputs:
        w(f"tl.store({ptr(out.value)} + offs, {var(out.src)}.to({ptr(out.value)}.dtype.element_ty), "
          "mask=mask)")
    w.dedent()
    w()


def _triangle_sizes(kernel: Kernel) -> list[str]:
    """The matrix sizes a triu / tril in the body needs."""
    return ["tri_rows", "tri_cols"] if any(op.op in ("triu", "tril") for op in kernel.body) else []


def _size_needed(j: int, needed: list[int], axes: list[Axis]) -> bool:
    """size_j appears as a divisor of an earlier needed axis or as the modulus of axis j."""
    return any(i <= j for i in needed)


def _spread_single_values(w: Writer, kernel: Kernel, full: list[int]) -> None:
    """An operand that spans some of the dims is read as a dense tensor over them. At a size where such a
    dim is 1 in the operand but not in the output (KernelBench's HingeLoss at batch 1: targets of (1,)
    against predictions of (1, 32768)) it holds one value that broadcasts everywhere: spread it over its
    dims. Any other mismatch raises in expand() instead of reading past the operand's end."""
    for o in kernel.operands:
        if o.scalar or not o.dims or o.dims == full:
            continue
        spread_single_value(w, o.value, o.dims, "shape")


def spread_single_value(w: Writer, v: str, dims: list[int], shape: str) -> None:
    """Spread operand `v` over `dims` of `shape` where it holds a single value at this size (above; the
    reduce launcher's operands that span part of an axis too, reduce_launch.py)."""
    size = " * ".join(f"{shape}[{d}]" for d in dims)
    w(f"if {v}.numel() != {size}:  # a single value broadcast at this size")
    w(f"    {v} = {v}.reshape(-1).expand({size}).contiguous()")


def _params(kernel: Kernel) -> list[str]:
    return [var(o.value) if o.scalar else ptr(o.value) for o in kernel.operands]


def emit_launcher(w: Writer, kernel: Kernel, name: str, launcher: Launcher) -> None:
    axes = axes_of(kernel)
    shape_of = kernel.space["shape_of"]
    launcher.begin(w)
    w.indent()
    if len(shape_of) == 1:
        w(f"shape = {shape_of[0]}.shape")
    else:
        w(f"shape = torch.broadcast_shapes({', '.join(v + '.shape' for v in shape_of)})")
    launcher.contiguous(w)
    full = list(range(len(kernel.space["traced"])))
    _spread_single_values(w, kernel, full)
    device = launcher.device()
    for out in kernel.outputs:
        w(f"{out.value} = {output_alloc('shape', out.dtype, device)}")
    w("n = math.prod(shape)")
    needed_axes = broadcast_axes(kernel, axes, full)
    sizes = []
    for j in range(1, len(axes)):
        if _size_needed(j, needed_axes, axes):
            d = axes[j].dims
            w(f"size{j} = math.prod(shape[{d[0]}:{d[-1] + 1}])")
            sizes.append(f"size{j}")
    if _triangle_sizes(kernel):
        w("tri_rows, tri_cols = shape[-2], shape[-1]")
    args = [o.value for o in kernel.operands] + [o.value for o in kernel.outputs] + ["n"] + sizes + \
        _triangle_sizes(kernel)
    cfg = kernel.config
    if cfg.get("autotune"):
        w("grid = lambda meta: (triton.cdiv(n, meta['BLOCK']),)")
        w(f"{name}[grid]({', '.join(args)})")
    else:
        w(f"grid = (triton.cdiv(n, {cfg['BLOCK']}),)")
        kw = [f"BLOCK={cfg['BLOCK']}"] + [f"num_warps={cfg['num_warps']}"]
        w(f"{name}[grid]({', '.join(args + kw)})")
    launcher.finish(w)
    w.dedent()
    w()


def tuning_space(kernel: Kernel) -> list[dict]:
    """Autotune candidates: the current config first, then block/warp variations."""
    current = {"BLOCK": kernel.config["BLOCK"], "num_warps": kernel.config["num_warps"]}
    menu = [current] + [{"BLOCK": b, "num_warps": nw} for b, nw in
                        ((1024, 4), (2048, 8), (4096, 8), (512, 4), (8192, 16))]
    return autotune_configs(menu, ["BLOCK"])
