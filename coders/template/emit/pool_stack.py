"""The rows form's stacked planes (config `stack` = P; a probe key of the 2026-11-29 pool probe,
benchmarks/probes/2026-11-29-pool, off in the port): a program's strip of BLOCK_N columns holds the
same output row of P planes (of P outer indices: batch x channel), BLOCK_N // P columns each.

Why: a row narrower than a warp's groups leaves the shift (pool_shift.py) few outputs per thread.
43_Max_Pooling_3D's output rows are 62 wide (k3 s2 p1 d3 over 128): the port's strip of 64 is one
warp of G = 2 outputs per thread, whose 3 chunks per group (columns -4..7 of the group's first input
column) are mostly lanes no tap reads; compiled for sm_90, ptxas drops those lanes, so most loads are
scalar again (48 LDG.128 + 144 scalar, h100-shift.log's 69.3% of the memory floor). Stacking 4 rows
of 64 in one warp's strip of 256 gives each thread G = 8 outputs of one row: 6 chunks per group
(columns -4..23), the middle 4 read whole (one LDG.128 each), instead of 12 mostly scalar chunks per
8 outputs. Nothing else of the form changes: the walk down the rows, the slide's queue and the ring
are per column of the strip, and each column's plane is its own `outer`.

The launcher turns the stack on (constexpr STACK = P) only where an output row fits BLOCK_N // P
columns; else STACK = 1 and the strip is the rows form's. A stack past the last plane reads the last
plane (its outer index clamped) and stores nothing (the mask). Preconditions (`stack_ok`): the rows
form above 1-D, no vector taps, P a power of two with BLOCK_N // P at least G (the shift's group),
and no operand of part of the outer dims or hoisted per-plane ops (one `outer` per column).
"""

from __future__ import annotations

from coders.template.emit.common import Writer
from coders.template.emit.pool_forms import is_rows, is_vector
from coders.template.emit.pool_regions import Regions
from coders.template.ir import Kernel

WIDTH = "(BLOCK_N // STACK)"  # one plane's columns of the strip


def planes(kernel: Kernel) -> int:
    """P, planes per strip (config `stack`; 0: off)."""
    return int(kernel.config.get("stack") or 0)


def is_stack(kernel: Kernel) -> bool:
    return is_rows(kernel) and bool(planes(kernel)) and stack_ok(kernel)


def stack_ok(kernel: Kernel) -> bool:
    p, strip = planes(kernel), int(kernel.config.get("BLOCK_N") or 0)
    if kernel.space.get("nd", 1) < 2 or is_vector(kernel) or p < 2 or p & (p - 1) or strip % p:
        return False
    group = max(int(kernel.config.get("shift") or 0), 1)
    regions = Regions(kernel)
    return strip // p >= group and not regions.split_outer() and not regions.hoisted


def width(kernel: Kernel) -> str:
    """The columns of one plane's row in the strip: BLOCK_N, or BLOCK_N // STACK when stacked."""
    return WIDTH if is_stack(kernel) else "BLOCK_N"


def columns(kernel: Kernel) -> str:
    """The strip's column offsets within its plane's row."""
    return f"tl.arange(0, BLOCK_N) % {WIDTH}" if is_stack(kernel) else "tl.arange(0, BLOCK_N)"


def emit_outer(w: Writer, kernel: Kernel, nd: int) -> None:
    """After `outer` (the program's stack) is known: each column's plane, its validity in `mask`,
    clamped to the last plane for the loads; plane_o0 is the stack's first plane (the shift's chunks
    take their planes from it)."""
    if not is_stack(kernel):
        return
    w("# stacked planes: column c of the strip is plane outer * STACK + c // (BLOCK_N // STACK)")
    w(f"plane_n = n // ({' * '.join(f'OUT{j}' for j in range(nd))})")
    w("plane_o0 = outer * STACK")
    w(f"outer = plane_o0 + tl.arange(0, BLOCK_N) // {WIDTH}")
    w("mask = mask & (outer < plane_n)")
    w("outer = tl.minimum(outer, plane_n - 1)  # past the last plane: read the last, store nothing")


def emit_chunk_outer(w: Writer, kernel: Kernel, m: str, g: int) -> bool:
    """Before a shift's chunk loads ([m, CHUNK] positions): `outer` per group (kept in plane_keep);
    True where the caller restores it after (`outer = plane_keep`, pool_shift.emit_taps)."""
    if not is_stack(kernel):
        return False
    w("plane_keep = outer")
    w(f"outer = tl.minimum(plane_o0 + tl.arange(0, {m})[:, None] // ({WIDTH} // {g}), plane_n - 1)")
    w("if WIDE:")
    w("    outer = outer.to(tl.int64)")
    return True


def group_index(kernel: Kernel, m: str, g: int) -> str:
    """A group's index within its plane's row (the shift's win_g)."""
    if not is_stack(kernel):
        return f"tl.arange(0, {m})[:, None]"
    return f"(tl.arange(0, {m}) % ({WIDTH} // {g}))[:, None]"


def stack_value(kernel: Kernel) -> str:
    """The launcher's _stack (its STACK): P where an output row fits one plane's columns, else 1."""
    p = planes(kernel)
    return f"{p} if _out[-1] <= {kernel.config['BLOCK_N'] // p} else 1"


def emit_planes(w: Writer, kernel: Kernel, nd: int) -> None:
    """The launcher's _planes (the grid's planes x bands x strips) in stacks: P outer planes a
    program (3-D: per output depth)."""
    if not is_stack(kernel):
        return
    w(f"_stack = {stack_value(kernel)}")
    w("_depth = max(_out[0], 1)" if nd == 3 else "_depth = 1")
    w("_planes = triton.cdiv(_planes // _depth, _stack) * _depth")
