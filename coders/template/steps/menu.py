"""The menu: the legal steps of a program, each one that changes it (and whose tiles still fit in
shared memory); the tuning knobs are the dominant kernel's, by kind."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coders.template import fuse
from coders.template.conv_lower import library_ops, to_library
from coders.template.emit import conv_fma
from coders.template.emit import pool as pool_emit
from coders.template.emit import reduce as reduce_emit
from coders.template.emit import scan as scan_emit
from coders.template.emit.channel_reduce import reduces_channels
from coders.template.emit.common import SMEM_BYTES
from coders.template.emit.reduce import Layout
from coders.template.ir import Kernel, ProgramIR
from coders.template.lower import POINTWISE_CONFIG
from coders.template.scans import WALK_KINDS
from coders.template.steps.apply import ROWS_MAX_COLS, apply
from coders.template.steps.kernels import (
    SMS,
    dominant,
    dot_kernels,
    is_column,
    matmul_mnk,
    numel,
    programs,
    smem_bytes,
    tf32_allowed,
)
from mtmc.protocols import CoderError
from mtmc.strategies import Strategy
from mtmc.tasks import Task

POINTWISE_BLOCKS = (256, 512, 1024, 2048, 4096)
POOL_BLOCKS = (128, 256, 512, 1024, 2048)  # output elements per program
ROW_BLOCKS = (1024, 2048, 4096, 8192, 16384, 32768)
WALK_BLOCKS = (256, 512, 1024, 2048, 4096)  # positions per chunk of a row scan or arg-reduction
MATMUL_BLOCKS = (32, 64, 128, 256)
MATMUL_PRESETS = ((128, 128, 32), (128, 64, 32), (64, 128, 32), (128, 256, 64), (64, 64, 32))
ATTENTION_BLOCKS = (32, 64, 128)
WARPS = (2, 4, 8, 16)
STAGES = (1, 2, 3, 4, 5)
GROUPS = (1, 4, 8, 16)
SPLITS = (1, 2, 4, 8)
ROWS_STEPS = (1, 4, 16, 64)  # rows per program of a short-row reduction (`rows` steps; the port: 16)


def legal(ir: ProgramIR, task: Task) -> list[Strategy]:
    out: list[Strategy] = []
    for kind in ("epilogue", "prologue"):
        if fuse.first_fusion(ir, (kind,)) is not None:
            out.append(Strategy.make("fuse", kind))
    first = fuse.first_fusion(ir) if out else None
    if first is not None and fuse.first_fusion(first) is not None:  # two or more pairs: all at once too
        out.append(Strategy.make("fuse", "all"))
    for kind in ("attention", "softmax"):
        if fuse.fuse_attention(ir, kind) is not None:
            out.append(Strategy.make("fuse", kind))
    out += [Strategy.make("library", op) for op in library_ops(ir, task.library_ops)
            if to_library(ir, op, POINTWISE_CONFIG).kernels()]
    kernel = dominant(ir)
    out += [s for s in _knobs(ir, task, kernel) + _precisions(ir, task) if _useful(ir, task, s)]
    return out


def _knobs(ir: ProgramIR, task: Task, kernel: Kernel) -> list[Strategy]:
    tuned = bool(kernel.config.get("autotune"))
    by_kind = _WALK_KNOBS if kernel.kind in WALK_KINDS else _KIND_KNOBS.get(kernel.kind)
    menu = by_kind(ir, kernel, kernel.config, tuned) if by_kind is not None else []
    # a cat launches once per input, a recurrence once per time step
    if kernel.kind not in ("matmul", "cat", "recurrent") and not tuned:
        menu.append(Strategy.make("autotune"))
    return menu


# The tuning knobs of one kernel kind: (ir, kernel, its config, autotuned) -> steps
Knobs = Callable[[ProgramIR, Kernel, dict[str, Any], bool], list[Strategy]]


def _pointwise_knobs(ir: ProgramIR, kernel: Kernel, cfg: dict[str, Any], tuned: bool) -> list[Strategy]:
    make = Strategy.make
    menu: list[Strategy] = []
    if not tuned:
        menu += [make("tile", BLOCK=b) for b in POINTWISE_BLOCKS]
        menu += [make("num_warps", w) for w in WARPS]
    if not cfg.get("vectorize"):
        menu.append(make("vectorize"))
    return menu


def _blocked_knobs(ir: ProgramIR, kernel: Kernel, cfg: dict[str, Any], tuned: bool) -> list[Strategy]:
    """Pools and cats: output elements per program, and warps."""
    if tuned:
        return []
    forms = pool_emit.form_steps(kernel) if kernel.kind == "pool" else []  # tiles, vector taps
    return [Strategy.make("tile", BLOCK=b) for b in POOL_BLOCKS] + \
        [Strategy.make("num_warps", w) for w in WARPS] + forms


def _neighbour_tiles(cfg: dict[str, Any], fits: Callable[[int, int], bool]) -> list[Strategy]:
    """BLOCK_M or BLOCK_N doubled or halved, where the new tile fits."""
    bm, bn = cfg["BLOCK_M"], cfg["BLOCK_N"]
    return [Strategy.make("tile", BLOCK_M=m, BLOCK_N=n)
            for m, n in ((bm * 2, bn), (bm // 2, bn), (bm, bn * 2), (bm, bn // 2)) if fits(m, n)]


def _walk_knobs(ir: ProgramIR, kernel: Kernel, cfg: dict[str, Any], tuned: bool) -> list[Strategy]:
    """Scans and arg-reductions: positions per chunk of a row, or a column kernel's tile."""
    if tuned:
        return []
    if scan_emit.is_row(kernel):
        n_walk = kernel.space["traced"][kernel.space["dim"]]
        menu = [Strategy.make("tile", BLOCK=b) for b in WALK_BLOCKS if b <= 2 * max(n_walk, 256)]
    else:
        menu = _neighbour_tiles(cfg, lambda m, n: 8 <= m <= 256 and 16 <= n <= 256)
    return menu + [Strategy.make("num_warps", w) for w in WARPS]


def _reduce_knobs(ir: ProgramIR, kernel: Kernel, cfg: dict[str, Any], tuned: bool) -> list[Strategy]:
    make = Strategy.make
    menu: list[Strategy] = []
    if is_column(kernel):
        if not tuned:
            menu += _neighbour_tiles(cfg, lambda m, n: 8 <= m <= 256 and 16 <= n <= 256)
            menu += [make("num_warps", w) for w in WARPS]
        return menu + _reduce_splits(ir, kernel)
    n_cols = numel(kernel.space["traced"][slice(*kernel.space["red"])])
    if not tuned:
        menu += [make("tile", BLOCK=b) for b in ROW_BLOCKS if b <= 2 * max(n_cols, 1024)]
        menu += [make("num_warps", w) for w in WARPS]
        if n_cols > cfg["BLOCK"]:
            menu += [make("num_stages", s) for s in (1, 2, 3)]
    if n_cols <= ROWS_MAX_COLS:  # apply refuses the forms that take one row per program
        menu += [make("rows", r) for r in ROWS_STEPS]
    if not cfg.get("persistent"):
        menu.append(make("persistent"))
    return menu + _reduce_splits(ir, kernel)


def _matmul_knobs(ir: ProgramIR, kernel: Kernel, cfg: dict[str, Any], tuned: bool) -> list[Strategy]:
    make = Strategy.make
    menu: list[Strategy] = []
    split = cfg.get("split_k", 1) > 1
    if not tuned:
        bm, bn, bk = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"]
        tiles = [(bm * 2, bn, bk), (bm // 2, bn, bk), (bm, bn * 2, bk), (bm, bn // 2, bk),
                 (bm, bn, 64 if bk == 32 else 32), *MATMUL_PRESETS]
        for m, n, k in dict.fromkeys(tiles):
            if m in MATMUL_BLOCKS and n in MATMUL_BLOCKS and k in (32, 64) and m * n <= 128 * 256:
                menu.append(make("tile", BLOCK_M=m, BLOCK_N=n, BLOCK_K=k))
        menu += [make("num_warps", w) for w in (2, 4, 8)]
        menu += [make("num_stages", s) for s in STAGES]
    menu += [make("group_m", g) for g in GROUPS]
    _, m_, n_, k_ = matmul_mnk(ir, kernel)
    if not tuned and not cfg.get("persistent") and (split or k_ >= 4 * max(m_, n_) or
                                                    (m_ * n_ <= 512 * 512 and k_ >= 1024)):
        # and the neighbours of a split the port chose (lower/matmul.py port_split_k: 32 slices)
        current = cfg.get("split_k", 1)
        menu += [make("split_k", s) for s in dict.fromkeys([*SPLITS, current // 2, current * 2])
                 if 1 <= s <= 64]
    if not cfg.get("persistent") and not split:
        menu.append(make("persistent"))
    if not tuned and not split:
        menu.append(make("autotune"))
    return menu


def _conv_transpose_knobs(ir: ProgramIR, kernel: Kernel, cfg: dict[str, Any], tuned: bool) -> list[Strategy]:
    if tuned:
        return []
    if conv_fma.uses_fma(kernel):
        return _fma_tiles(kernel) + [Strategy.make("num_warps", w) for w in (4, 8)]
    tiles = _conv_transpose_tiles(cfg)
    if reduces_channels(kernel):  # BLOCK_N holds every channel (emit/channel_reduce.py)
        tiles = [s for s in tiles if dict(s.params)["BLOCK_N"] == cfg["BLOCK_N"]]
    return tiles + [Strategy.make("num_warps", w) for w in (2, 4, 8)] + \
        [Strategy.make("num_stages", s) for s in STAGES]


def _recurrent_knobs(ir: ProgramIR, kernel: Kernel, cfg: dict[str, Any], tuned: bool) -> list[Strategy]:
    """A tl.dot block of the hidden state is at least 16."""
    return [Strategy.make("tile", BLOCK=b) for b in (16, 32, 64, 128)] + \
        [Strategy.make("num_warps", w) for w in (2, 4, 8)]


def _attention_knobs(ir: ProgramIR, kernel: Kernel, cfg: dict[str, Any], tuned: bool) -> list[Strategy]:
    if tuned:
        return []
    return _neighbour_tiles(cfg, lambda m, n: m in ATTENTION_BLOCKS and n in ATTENTION_BLOCKS) + \
        [Strategy.make("num_warps", w) for w in (4, 8)] + \
        [Strategy.make("num_stages", s) for s in (1, 2, 3, 4)]


_WALK_KNOBS: Knobs = _walk_knobs
_KIND_KNOBS: dict[str, Knobs] = {
    "pointwise": _pointwise_knobs,
    "pool": _blocked_knobs, "cat": _blocked_knobs,
    "reduce": _reduce_knobs,
    "matmul": _matmul_knobs,
    "conv": lambda ir, kernel, cfg, tuned: _conv_knobs(kernel) if not tuned else [],
    "conv_transpose": _conv_transpose_knobs,
    "recurrent": _recurrent_knobs,
    "attention": _attention_knobs,
}


def _fma_tiles(kernel: Kernel) -> list[Strategy]:
    """Neighbouring tiles of an FMA loop (the direct form, emit/conv_fma.py): no BLOCK_K, no dot."""
    bm, bn = kernel.config["BLOCK_M"], kernel.config["BLOCK_N"]
    return [Strategy.make("tile", BLOCK_M=m, BLOCK_N=n)
            for m, n in ((bm * 2, bn), (bm // 2, bn), (bm, bn * 2), (bm, bn // 2))
            if 16 <= m <= 256 and 16 <= n <= 128 and (n == bn or not reduces_channels(kernel))]


def _conv_knobs(kernel: Kernel) -> list[Strategy]:
    """Neighbouring tiles (a dot needs blocks of at least 16), warps and stages; autotune holds the
    wider search. A short menu: each step is verified on the interpreter, where a conv program
    costs several times an elementwise one. group_m and split_k are not implemented for convs."""
    cfg = kernel.config
    make = Strategy.make
    bm, bn = cfg["BLOCK_M"], cfg["BLOCK_N"]
    menu: list[Strategy] = []
    if kernel.space["form"] == "gemm" and not conv_fma.uses_fma(kernel):
        bk = cfg["BLOCK_K"]
        tiles = [(bm * 2, bn, bk), (bm // 2, bn, bk), (bm, bn * 2, bk), (bm, bn, 64 if bk == 32 else 32)]
        if reduces_channels(kernel):  # BLOCK_N holds every channel (emit/channel_reduce.py)
            tiles = [t for t in tiles if t[1] == bn]
        for m, n, k in dict.fromkeys(tiles):
            if 16 <= m <= 256 and 16 <= n <= 256 and k in (16, 32, 64) and m * n <= 128 * 256:
                menu.append(make("tile", BLOCK_M=m, BLOCK_N=n, BLOCK_K=k))
    else:
        menu += _fma_tiles(kernel)
    menu += [make("num_warps", w) for w in (4, 8)]
    menu += [make("num_stages", s) for s in (2, 3, 4)]
    return menu


def _conv_transpose_tiles(cfg: dict[str, Any]) -> list[Strategy]:
    """Neighbours of the current tile (each block halved or doubled) and a few common presets."""
    bm, bn, bk = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"]
    tiles = [(bm * 2, bn, bk), (bm // 2, bn, bk), (bm, bn * 2, bk), (bm, bn // 2, bk), (bm, bn, bk * 2),
             (bm, bn, bk // 2), (128, 64, 32), (64, 64, 32), (128, 128, 32)]
    return [Strategy.make("tile", BLOCK_M=m, BLOCK_N=n, BLOCK_K=k) for m, n, k in dict.fromkeys(tiles)
            if 16 <= m <= 256 and 16 <= n <= 256 and 16 <= k <= 128 and m * n <= 128 * 256]


def _reduce_splits(ir: ProgramIR, kernel: Kernel) -> list[Strategy]:
    """Split a long reduction across programs when too few programs would run it (few rows)."""
    cfg = kernel.config
    if cfg.get("autotune") or cfg.get("persistent") or not reduce_emit.splittable(kernel):
        return []
    lay = Layout(kernel)
    n_red = numel(kernel.space["traced"][lay.d0:lay.d1])
    if programs(ir, kernel) // cfg.get("split_k", 1) >= 2 * SMS or n_red < 4096:
        return []
    return [Strategy.make("split_k", s) for s in (1, 4, 16, 64)]


def _precisions(ir: ProgramIR, task: Task) -> list[Strategy]:
    """ieee and tf32x3 (3 tensor-core passes, about fp32 accuracy) always; tf32 where a kernel may
    take it (tf32_allowed). A precision is the program's, not one kernel's: it applies to every fp32
    dot that may take it (baddbmm_softmax's dominant kernel is its softmax, so a precision for the
    dominant kernel alone never reached its bmm)."""
    dots = dot_kernels(ir)
    if not dots:
        return []
    options = ["ieee", "tf32x3"] + (["tf32"] if any(tf32_allowed(task, k) for k in dots) else [])
    return [Strategy.make("precision", p) for p in options]


def _useful(ir: ProgramIR, task: Task, strategy: Strategy) -> bool:
    """The step changes the program, and its kernels' tiles still fit in shared memory."""
    try:
        after = apply(ir, task, strategy)
    except CoderError:
        return False
    fits = all(smem_bytes(after, k) <= SMEM_BYTES for k in after.kernels())
    return fits and after.to_dict() != ir.to_dict()
