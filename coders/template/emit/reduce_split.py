"""Split reductions (the menu's `split_k`): SPLIT programs share each row, each reducing one slice
of the reduced extent into a float32 workspace, and a second kernel combines the slices and computes
what follows the reductions (reduce_launch.launch_split launches both)."""

from __future__ import annotations

import re

from coders.template.emit.common import REDUCTIONS, BodyEmitter, FusionError, Writer, needed, ptr, var
from coders.template.emit.launch import kernel_header, wrap_call
from coders.template.emit.reduce_analysis import analyse, full_size_outputs
from coders.template.emit.reduce_body import body_of
from coders.template.emit.reduce_layout import COMBINE, IDENTITY, Layout, runs, span, span_sizes
from coders.template.emit.reduce_norm_split import norm_splittable
from coders.template.ir import Kernel, Op


def splittable(kernel: Kernel) -> bool:
    """A split reduction's partial results combine later (reduces_in_slices), or a split
    normalization's statistics do (reduce_norm_split.py, norm_splittable)."""
    return reduces_in_slices(kernel) or norm_splittable(kernel)


def reduces_in_slices(kernel: Kernel) -> bool:
    """Every reduction in the first pass and no full-size output: partial results combine later."""
    lay = Layout(kernel)
    if lay.groups:
        return False
    varies, after, _ = analyse(kernel, lay, pair=False)
    reds = [op for op in kernel.body if op.op in REDUCTIONS]
    return bool(reds) and all(after[op.out] == 1 for op in reds) and \
        not full_size_outputs(kernel, varies)


def _reduced_address(lay: Layout, dims: list[int], what: str) -> str:
    """Offset of an element of a reduced-shape operand, at flat reduced index `offs`."""
    outer, inner = set(range(lay.d0)), set(range(lay.d1, lay.rank))
    dims = set(dims)
    if not dims:
        return "0"
    if dims == outer | inner:
        return "offs"
    if dims == outer:
        return "offs // n_inner"
    if dims == inner:
        return "offs % n_inner"
    if not dims <= outer | inner:
        raise FusionError(f"{what}: a split reduction cannot address dims {sorted(dims)}")
    # part of the kept dims (a per-channel bias after a mean over other dims): each run of its dims
    # indexed from the flat index as in the layout's spread addresses (reduce_layout.py)
    kept = sorted(outer | inner)
    terms = []
    for run in runs(sorted(dims)):
        index = "offs"
        after = runs([d for d in kept if d > run[-1]])
        if after:
            sizes = [span(r[0], r[-1] + 1) for r in after]
            index = f"offs // {sizes[0]}" if len(sizes) == 1 else f"offs // ({' * '.join(sizes)})"
        if run[0] != kept[0]:
            size = span(run[0], run[-1] + 1)
            index = f"({index}) % {size}" if after else f"offs % {size}"
        inner_sizes = [span(r[0], r[-1] + 1) for r in runs([d for d in dims if d > run[-1]])]
        terms.append(" * ".join([f"({index})" if inner_sizes and " " in index else index, *inner_sizes]))
    return " + ".join(terms)


def combine_ops(kernel: Kernel) -> list[Op]:
    reds = {op.out for op in kernel.body if op.op in REDUCTIONS}
    return needed(kernel.body, [o.src for o in kernel.outputs], stop=reds)


def emit_split(w: Writer, kernel: Kernel, name: str) -> tuple[list[str], list[str]]:
    """Write the partial and combine kernels; returns the size arguments each one takes."""
    lay = Layout(kernel)
    lay.check()
    varies, _, _ = analyse(kernel, lay, pair=False)
    reds = [op for op in kernel.body if op.op in REDUCTIONS]
    body = body_of(kernel, lay, varies)
    bw = Writer()
    bw.depth = w.depth + 1
    lay.program(bw)
    bw("split = tl.program_id(1)")
    bw(f"# this program reduces one slice of the {lay.red_size} reduced elements")
    bw(f"chunk = tl.cdiv(tl.cdiv({lay.red_size}, {lay.block}), SPLIT) * {lay.block}")
    bw("lo = split * chunk")
    bw(f"hi = tl.minimum(lo + chunk, {lay.red_size})")
    done: set[str] = set()
    for op in kernel.body:
        if not varies[op.out] and op.op not in REDUCTIONS and all(
                not isinstance(a, str) or a in done for a in op.args):
            bw(body.statement(op))
            done.add(op.out)
    for op in reds:
        bw(f"acc_{var(op.out)} = {lay.acc_init(op.op)}")
    bw(f"for start in range(lo, hi, {lay.block}):")
    bw.indent()
    lay.index(bw, "start", bound="hi")
    for op in needed(kernel.body, [op.args[0] for op in reds], stop=done):
        bw(body.statement(op))
    for op in reds:
        bw(lay.acc_update(op.op, f"acc_{var(op.out)}", body.arg(op.args[0])))
    bw.dedent()
    index = "outer * n_inner + inner" if lay.column else "row"
    mask = ", mask=inner_mask" if lay.column else ""
    for j, op in enumerate(reds):
        partial = f"{COMBINE[op.op]}(acc_{var(op.out)}, axis=0{lay.keep})"
        slot = "split" if j == 0 else f"({j} * SPLIT + split)"
        bw(f"tl.store(ws_ptr + {slot} * n_reduced + {index}, {partial}{mask})")
    text = "\n".join(bw.lines)
    operands = [var(o.value) if o.scalar else ptr(o.value) for o in kernel.operands]
    sizes = [s for s in ("n_cols", "n_red", "n_inner") if re.search(rf"\b{s}\b", text)] + span_sizes(text)
    kernel_header(w, kernel, name, operands + ["ws_ptr", "n_reduced"] + sizes,
                  (["BLOCK_M", "BLOCK_N"] if lay.column else ["BLOCK"]) + ["SPLIT"])
    w.lines.extend(bw.lines)
    w()
    w()
    return sizes, _emit_combine(w, kernel, name, lay, reds)


def _emit_combine(w: Writer, kernel: Kernel, name: str, lay: Layout, reds: list[Op]) -> list[str]:
    ops = combine_ops(kernel)
    loaded = sorted({op.args[0] for op in ops if op.op == "load"})
    operands = [kernel.operands[i] for i in loaded]
    cw = Writer()
    cw.depth = w.depth + 1
    cw("offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)")
    cw("mask = offs < n_reduced")
    cw("# SLICES slices' partials at a time, one [SLICES, BLOCK] tile: their loads are in flight together")
    cw("slice_ids = tl.arange(0, SLICES)[:, None]")
    for op in reds:
        cw(f"acc_{var(op.out)} = tl.full([SLICES, BLOCK], {IDENTITY[op.op]}, tl.float32)")
    cw("for slice0 in range(0, SPLIT, SLICES):")
    cw("    sl = slice0 + slice_ids")
    cw("    slice_mask = (sl < SPLIT) & mask[None, :]")
    for j, op in enumerate(reds):
        slot = "sl" if j == 0 else f"({j} * SPLIT + sl)"
        part = f"tl.load(ws_ptr + {slot} * n_reduced + offs[None, :], mask=slice_mask, " \
            f"other={IDENTITY[op.op]})"
        acc = f"acc_{var(op.out)}"
        if op.op in ("sum", "mean"):
            cw(f"    {acc} += {part}")
        else:
            cw(f"    {acc} = {'tl.maximum' if op.op == 'max' else 'tl.minimum'}({acc}, {part})")
    for op in reds:
        cw(f"{var(op.out)} = {COMBINE[op.op]}(acc_{var(op.out)}, axis=0){lay.mean_divisor(op)}")

    def load(op: Op, operand) -> str:
        if operand.scalar:
            return f"{var(operand.value)} * 1.0" if not operand.integer else var(operand.value)
        where = _reduced_address(lay, operand.dims, operand.value)
        text = f"tl.load({ptr(operand.value)})" if where == "0" else \
            f"tl.load({ptr(operand.value)} + {where}, mask=mask, other=0)"
        return text if operand.integer else f"{text}.to(tl.float32)"

    body = BodyEmitter(kernel, load)
    for op in ops:
        cw(body.statement(op))
    for out in kernel.outputs:
        value = f"{var(out.src)}.to({ptr(out.value)}.dtype.element_ty)"
        cw(f"tl.store({ptr(out.value)} + offs, {value}, mask=mask)")
    text = "\n".join(cw.lines)
    sizes = [s for s in ("n_cols", "n_red", "n_inner") if re.search(rf"\b{s}\b", text)] + span_sizes(text)
    params = ["ws_ptr"] + [var(o.value) if o.scalar else ptr(o.value) for o in operands] + \
        [ptr(o.value) for o in kernel.outputs] + ["n_reduced"] + sizes
    w("@triton.jit")
    for line in wrap_call(f"def {combine_name(name)}",
                          params + ["SPLIT: tl.constexpr", "SLICES: tl.constexpr", "BLOCK: tl.constexpr"],
                          ":", w.depth):
        w(line)
    w.lines.extend(cw.lines)
    w()
    return sizes


def combine_name(name: str) -> str:
    return name.removesuffix("_kernel") + "_combine_kernel"
