"""The reduce kernel (emit/reduce.py describes its forms): a program's row or column block, in one
pass when it fits one block (ONE_PASS) and in chunks otherwise (reduce_passes.py)."""

from __future__ import annotations

import re

from coders.template.emit.common import Writer, ptr, var
from coders.template.emit.launch import kernel_header
from coders.template.emit.reduce_analysis import analyse, writes_by_channel
from coders.template.emit.reduce_body import body_of, store
from coders.template.emit.reduce_layout import Layout, span_sizes
from coders.template.emit.reduce_norm_split import emit_norm_split
from coders.template.emit.reduce_passes import looped
from coders.template.emit.reduce_split import emit_split, reduces_in_slices
from coders.template.ir import Kernel

_SIZES = ("n_rows", "n_cols", "n_red", "n_inner", "G", "CPG", "HW", "n_tail")


def build(kernel: Kernel, depth: int) -> tuple[Layout, list[str], list[str]]:
    """The kernel body's lines and the size arguments it reads."""
    lay = Layout(kernel)
    lay.check()
    bw = Writer()
    bw.depth = depth
    rows = lay.rows > 1
    if not rows:
        lay.program(bw)
    if kernel.config.get("persistent") and not lay.column:
        bw("# persistent: a fixed set of programs strides over the rows")
        bw("for row_id in range(tl.program_id(0), n_rows, tl.num_programs(0)):")
        bw.indent()
        bw("row = tl.cast(row_id, tl.int64)")
    bw("if ONE_PASS:")
    bw.indent()
    bw("# the whole reduced extent fits in one block: load once, keep it in registers")
    if rows:
        bw("# ROWS rows per program: a [ROWS, BLOCK] tile, each reduction one value per row")
        lay.program_rows(bw)
    _one_pass(bw, kernel, lay)
    bw.dedent()
    bw("else:")
    bw.indent()
    if rows:
        bw("# a row walked in chunks has a program to itself: the launcher passes ROWS = 1")
        bw("tl.static_assert(ROWS == 1)")
        lay.program(bw)
    looped(bw, kernel, lay)
    text = "\n".join(bw.lines)
    return lay, bw.lines, [s for s in _SIZES if re.search(rf"\b{s}\b", text)] + span_sizes(text)


def emit_kernel(w: Writer, kernel: Kernel, name: str) -> None:
    """Write the kernel; a split reduction writes its partial and combine kernels instead, a split
    normalization its statistics and normalize kernels."""
    if kernel.config.get("split_k", 1) > 1:
        (emit_split if reduces_in_slices(kernel) else emit_norm_split)(w, kernel, name)
        return
    lay, lines, sizes = build(kernel, w.depth + 1)
    operands = [var(o.value) if o.scalar else ptr(o.value) for o in kernel.operands]
    params = operands + [ptr(o.value) for o in kernel.outputs] + sizes
    constexprs = ["BLOCK_M", "BLOCK_N"] if lay.column else ["BLOCK"] + (["ROWS"] if lay.rows > 1 else [])
    if writes_by_channel(kernel, lay):
        constexprs.append("BY_CHANNEL")
    kernel_header(w, kernel, name, params, constexprs + ["ONE_PASS"],
                  key=["n_red", "n_inner"] if lay.column else ["n_cols"])
    w.lines.extend(lines)
    w()


def _one_pass(w: Writer, kernel: Kernel, lay: Layout) -> None:
    """The whole reduced extent in one block: every op once, on values held in registers."""
    lay.tiled = lay.rows > 1
    lay.index(w, None)
    body = body_of(kernel, lay, analyse(kernel, lay)[0])
    for op in kernel.body:
        w(body.statement(op))
    for out in kernel.outputs:
        store(w, lay, out)
    lay.tiled = False
