"""The rows form's shifted taps (config `shift` = G): a row result's last-dim taps formed in
registers from aligned chunks of the input row (emit/pool_rows.py's `_row_taps` asks here;
pool_forms.py says where the rows form applies, and pool_forms.shift_in_port where the port takes
the shift: the pools the 2026-11-28 probe measured it win on, benchmarks/probes/2026-11-28-pool,
h100-shift.log: 41 and 44 at G 8, strip 2048, 8 warps, 94.2 and 94.4% of the memory floor; 42 at
G 4, strip 512, slide 2, 89.4%; 43 at G 2, strip 64, one warp, slide 2, 69.3%).

Why: in the rows form each last-dim tap is a load of the strip shifted by the tap's offset
(`oi * ST - PD + k * DL`). Only the taps whose offset is a multiple of 4 are aligned, so compiled
for sm_90 (Triton 3.9 on the CPU) the others are scalar `ld.global.b32`: 41's 8 taps (dilation 3)
take 32 scalar loads per thread for 4 outputs in the flat form, 44's 8 taps 94 loads (108 in the
PTX, 4 of them v4) in the rows form; the L1 serves each input element 8 times, one 4-byte lane of a
load at a time.

Here a thread owns G consecutive outputs of the strip (a group; the strip is [BLOCK_N // G, G]).
Output j of group i reads input column `ST * (c0 + G * i) + t` with t = ST * j + k * DL - PD: the
group's taps are the columns t of the run starting at the group's first input column, which is
aligned to 4 where ST * G is. The run is loaded as CHUNK-wide aligned chunks (one 128-bit load
each: chunk q holds t in [4q, 4q + 4)), each chunk once, only the chunks some tap reads; the chunks
are split into columns in registers (tl.split, no data movement) and each output folds the columns
of its taps (max: one NaN-propagating maximum each, max.NaN.f32; avg: a sum). The G outputs are
joined back into the strip's [BLOCK_N] (tl.join), so the rest of the rows form (the ring, the
slide's queue, the store) is unchanged. 41 at G = 8: 8 chunks (32 floats) per 8 outputs instead of
64 scalar taps; 44: 4 chunks per 8 outputs.

The offsets t are the traced window's (known when the program is written); the launcher turns the
chunks on (constexpr SHIFT) only where the run-time window's last dim is the traced one, else the
plain taps run. Preconditions (`shift_ok`): a fixed traced window, the rows form without vector
taps, and a window prologue whose loads read whole-rank operands (a chunk is a [BLOCK_N // G,
CHUNK] block of positions; an operand of fewer dims would need its own shape). Border strips take
masked chunks (positions outside the input row are dropped after the prologue, as in the plain taps);
Triton still vectorizes them where the mask is constant over a chunk (a row's ends at multiples of 4).
A chunk may pass its group's first or last tap by up to 3 columns, so a strip takes unmasked chunks
only where its chunks lie inside the row (`emit_inner_bounds`), not only its taps.
"""

from __future__ import annotations

from coders.template.emit import pool_stack
from coders.template.emit.common import BodyEmitter, Writer
from coders.template.emit.pool_forms import is_rows, is_vector
from coders.template.emit.pool_regions import NAN_MAX, Regions
from coders.template.ir import Kernel

CHUNK = 4  # input columns per chunk: one 128-bit load of fp32


def group(kernel: Kernel) -> int:
    """G, outputs per thread group (config `shift`; 0: off)."""
    return int(kernel.config.get("shift") or 0)


def is_shift(kernel: Kernel) -> bool:
    """The rows form's shifted taps, where they apply (elsewhere the plain taps run)."""
    return is_rows(kernel) and bool(group(kernel)) and shift_ok(kernel)


def shift_ok(kernel: Kernel) -> bool:
    """A fixed traced window, no vector taps, G a power of two of at least 2 and at most the strip,
    and window loads of whole-rank operands only."""
    g, strip = group(kernel), int(kernel.config.get("BLOCK_N") or 0)
    if not kernel.space.get("fixed") or is_vector(kernel) or g < 2 or g & (g - 1) or g > strip:
        return False
    regions = Regions(kernel)
    full = list(range(regions.rank))
    return all(kernel.operands[op.args[0]].dims == full for op in regions.per_tap if op.op == "load")


def traced(kernel: Kernel) -> tuple[int, int, int, int]:
    """(kernel size, stride, padding, dilation) of the traced window's last dim."""
    fixed = kernel.space["fixed"]
    nd = kernel.space["nd"]
    return (fixed["kernel_size"][-1], fixed["stride"][-1], fixed["padding"][-1],
            fixed.get("dilation", [1] * nd)[-1])


def launch_flag(kernel: Kernel) -> str:
    """The launcher's SHIFT: the run-time window's last dim is the traced one."""
    return f"SHIFT=(_k[-1], _s[-1], _p[-1], _d[-1]) == {traced(kernel)}"


def taps(kernel: Kernel) -> list[list[int]]:
    """Per output j of a group, its taps' offsets t from the group's first input column."""
    ks, st, pd, dl = traced(kernel)
    return [[st * j + k * dl - pd for k in range(ks)] for j in range(group(kernel))]


def chunks(kernel: Kernel) -> list[int]:
    """The chunks q (columns [CHUNK * q, CHUNK * q + CHUNK) from a group's first input column) that
    some tap of the group reads."""
    return sorted({t // CHUNK for row in taps(kernel) for t in row})


def emit_inner_bounds(w: Writer, kernel: Kernel, last: int) -> None:
    """Narrow plane_inner (the strip's taps lie inside the input row: unmasked loads) to strips whose
    chunks lie inside the row too: a chunk passes its group's first or last tap by up to 3 columns,
    which unmasked would read past the row (past the tensor at its last row)."""
    q = chunks(kernel)
    w("if SHIFT:  # the strip's chunks inside the row too: a chunk may pass its taps by 3 columns")
    sw = pool_stack.width(kernel)  # the strip's columns of one plane's row (pool_stack.py)
    w(f"    plane_inner = plane_inner & (plane_c0 * ST{last} + {CHUNK * q[0]} >= 0) & "
      f"((plane_c0 + {sw} - {group(kernel)}) * ST{last} + {CHUNK * q[-1] + CHUNK - 1} < IN{last})")


def emit_taps(w: Writer, kernel: Kernel, regions: Regions, body: BodyEmitter, region: list,
              inner: bool, rows_ok: list[str]) -> None:
    """Fold the last-dim taps of the current input row (wi{nd-2}, and wi0 in 3-D) into win_row via
    aligned chunks; `inner`: the strip lies inside the input (no masks), else masked chunks
    (`rows_ok`: the row's and depth's tests, one number each)."""
    nd, last, max_pool, g = regions.nd, regions.nd - 1, regions.kind == "max", group(kernel)
    m = f"BLOCK_N // {g}"
    offsets = taps(kernel)
    w("# the groups' first input columns: ST x G apart, aligned where ST x G and the strip are")
    w(f"win_g = plane_c0 * ST{last} + {pool_stack.group_index(kernel, m, g)} * (ST{last} * {g})")
    w("if WIDE_PLANE:")
    w("    win_g = win_g.to(tl.int64)")
    pad = "float(\"-inf\")" if max_pool else "0.0"
    cols: dict[tuple[int, int], str] = {}
    restore = pool_stack.emit_chunk_outer(w, kernel, m, g)  # stacked planes: `outer` per group
    for q in chunks(kernel):
        w(f"wi{last} = win_g + ({q * CHUNK} + tl.arange(0, {CHUNK})[None, :])")
        if not inner:
            valid = f"(wi{last} >= 0) & (wi{last} < IN{last})"
            w(f"win_valid = {valid}" if not rows_ok else
              f"win_valid = tl.where({' & '.join(rows_ok)}, {valid}, False)")
        w("win_pos = " + {1: "wi0", 2: "wi0 * IN1 + wi1", 3: "(wi0 * IN1 + wi1) * IN2 + wi2"}[nd])
        region[0] = "inner" if inner else "win"
        for op in regions.per_tap:
            w(body.statement(op))
        value = body.arg(regions.pool.args[0])
        name = f"win_k{'m' if q < 0 else ''}{abs(q)}"  # q may be negative
        w(f"{name} = {value}" if inner else f"{name} = tl.where(win_valid, {value}, {pad})")
        for r, col in enumerate(_split(w, name, CHUNK, m)):
            cols[(q, r)] = col
    if restore:
        w("outer = plane_keep")
    outs = []
    for j, row in enumerate(offsets):
        acc = cols[(row[0] // CHUNK, row[0] % CHUNK)]
        for t in row[1:]:
            col = cols[(t // CHUNK, t % CHUNK)]
            acc = NAN_MAX.format(acc, col) if max_pool else f"{acc} + {col}"
        w(f"win_o{j} = {acc}")
        outs.append(f"win_o{j}")
    w(f"win_sh = tl.reshape({_join(w, outs, m)}, [BLOCK_N])")
    w(f"win_row = {NAN_MAX.format('win_row', 'win_sh')}" if max_pool else "win_row += win_sh")


def _split(w: Writer, name: str, width: int, m: str) -> list[str]:
    """The columns of `name`, a [m, width] tensor, as `width` tensors [m] (in-register splits)."""
    if width == 2:
        w(f"{name}e, {name}o = tl.split({name})")
        return [f"{name}e", f"{name}o"]
    w(f"{name}e, {name}o = tl.split(tl.reshape({name}, [{m}, {width // 2}, 2]))")
    even, odd = _split(w, f"{name}e", width // 2, m), _split(w, f"{name}o", width // 2, m)
    return [c for pair in zip(even, odd, strict=True) for c in pair]


def _join(w: Writer, cols: list[str], m: str) -> str:
    """The [m, len(cols)] tensor whose column j is cols[j] (in-register joins); its name."""
    if len(cols) == 2:
        name = f"{cols[0]}j"
        w(f"{name} = tl.join({cols[0]}, {cols[1]})")
        return name
    even, odd = _join(w, cols[0::2], m), _join(w, cols[1::2], m)
    name = f"{even}_{len(cols)}"
    w(f"{name} = tl.reshape(tl.join({even}, {odd}), [{m}, {len(cols)}])")
    return name
