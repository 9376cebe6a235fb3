"""Applying one step: a fusion, a vendor call, a precision for every fp32 dot, or a tuning step on
the dominant kernel and its twins."""

from __future__ import annotations

import copy
from typing import Any

from coders.template import fuse
from coders.template.conv_lower import library_ops, to_library
from coders.template.emit import pool as pool_emit
from coders.template.emit import reduce as reduce_emit
from coders.template.emit import scan as scan_emit
from coders.template.emit.channel_reduce import reduces_channels
from coders.template.ir import Kernel, ProgramIR
from coders.template.lower import POINTWISE_CONFIG
from coders.template.scans import WALK_KINDS
from coders.template.steps.kernels import (
    DOT_KINDS,
    dominant,
    dot_kernels,
    is_column,
    numel,
    tf32_allowed,
    uses_dot,
)
from mtmc.protocols import CoderError
from mtmc.strategies import Strategy
from mtmc.tasks import Task

# a `rows` step: rows per program up to ROWS_MAX, for rows of at most ROWS_MAX_COLS columns (a short
# row gives a one-row program a warp or less: LayerNorm over 64 columns)
ROWS_MAX = 64
ROWS_MAX_COLS = 1024


def apply(ir: ProgramIR, task: Task, strategy: Strategy) -> ProgramIR:
    kind = strategy.kind
    if kind == "fuse":
        return _fuse(ir, str(strategy.value))
    if kind == "library":
        _require(str(strategy.value) in library_ops(ir, task.library_ops),
                 f"no Triton {strategy.value} the task lets a vendor call compute")
        new = to_library(ir, str(strategy.value), POINTWISE_CONFIG)
        # the verifier rejects a program that launches no Triton kernel of its own (a decoy)
        _require(bool(new.kernels()), "the vendor call would leave no Triton kernel")
        return new
    if kind in ("port", "stop", "fix"):
        raise CoderError(f"`{strategy}` is not an IR step of the template coder")
    new = copy.deepcopy(ir)
    if kind == "precision":
        dots = dot_kernels(new)
        _require(bool(dots), "precision applies to fp32 dot kernels (matmul, conv, attention, recurrent)")
        if strategy.value == "tf32":  # the kernels that may not take it keep their precision
            dots = [k for k in dots if tf32_allowed(task, k)]
            _require(bool(dots), "the task does not allow tf32 (convolutions take it by default)")
        for kernel in dots:
            _configure(new, task, kernel, strategy)
        return new
    kernel = dominant(new)
    twins = [k for k in new.kernels() if k is not kernel and k.kind == kernel.kind and
             k.config == kernel.config and _shape_key(k) == _shape_key(kernel)]
    _configure(new, task, kernel, strategy)
    for twin in twins:
        try:
            _configure(new, task, twin, strategy)
        except CoderError:
            continue  # the step does not fit this twin: it keeps its configuration
    return new


def _shape_key(kernel: Kernel) -> tuple:
    """What makes two kernels the same problem, apart from the tensors they read."""
    space = kernel.space
    return (str(space.get("traced")), str(space.get("red")), str(space.get("groups")), space.get("form"),
            space.get("dtype"), space.get("causal"))


def _configure(new: ProgramIR, task: Task, kernel: Kernel, strategy: Strategy) -> None:
    """Edit `kernel.config` for one tuning step (raises CoderError when it does not apply)."""
    kind = strategy.kind
    cfg = kernel.config
    args: dict[str, Any] = {k: v for k, v in strategy.params if k != "value"}
    value = strategy.value
    if kernel.kind == "pool" and kind in ("tile", "vectorize"):
        return pool_emit.configure(kernel, strategy)  # its flat and tile forms (emit/pool.py)
    if kind == "tile":
        _configure_tile(kernel, strategy, args)
    elif kind == "num_warps":
        _require(value in (1, 2, 4, 8, 16, 32), "num_warps must be a power of two up to 32")
        _require(not cfg.get("autotune"), "the kernel is autotuned")
        cfg["num_warps"] = int(value)
    elif kind == "num_stages":
        _require(kernel.kind in DOT_KINDS + ("reduce",) and 1 <= int(value) <= 8,
                 "num_stages applies to kernels with a pipelined loop")
        _require(not cfg.get("autotune"), "the kernel is autotuned")
        cfg["num_stages"] = int(value)
    elif kind == "group_m":
        _require(kernel.kind == "matmul", "group_m applies to matmul kernels")
        cfg["GROUP_M"] = int(value)
    elif kind == "split_k" and kernel.kind == "reduce":
        _require(reduce_emit.splittable(kernel),
                 "the reduction has dependent passes, or reduced outputs beside full-size ones")
        _require(not cfg.get("persistent") and not cfg.get("autotune"),
                 "split reductions do not combine with persistent or autotuned kernels")
        _require(int(value) >= 1, "split_k must be positive")
        _require(cfg.get("ROWS", 1) == 1, "a kernel of several rows per program is not split")
        cfg["split_k"] = int(value)
    elif kind == "split_k":
        _require(kernel.kind == "matmul", "split_k applies to matmul kernels")
        _require(not cfg.get("persistent") and not cfg.get("autotune"),
                 "split-K does not combine with persistent or autotuned kernels")
        _require(int(value) >= 1, "split_k must be positive")
        cfg["split_k"] = int(value)
    elif kind == "persistent":
        _require(kernel.kind == "matmul" or (kernel.kind == "reduce" and not is_column(kernel)),
                 "persistent applies to matmul and row-reduction kernels")
        _require(cfg.get("split_k", 1) == 1, "split-K kernels are not persistent")
        _require(cfg.get("ROWS", 1) == 1, "a kernel of several rows per program is not persistent")
        cfg["persistent"] = True
    elif kind == "rows":
        _configure_rows(kernel, int(value))
    elif kind == "vectorize":
        _require(kernel.kind == "pointwise", "vectorize applies to elementwise kernels")
        cfg["vectorize"] = True
    elif kind == "autotune":
        _require(cfg.get("split_k", 1) == 1, "split-K kernels are not autotuned")
        if kernel.kind == "reduce" and not is_column(kernel):
            cfg.setdefault("num_warps", None)
        cfg["autotune"] = True
    elif kind == "precision":  # `apply` brings only the fp32 dot kernels here
        _require(value in ("ieee", "tf32x3") or (value == "tf32" and tf32_allowed(task, kernel)),
                 f"the task does not allow {value} for the {kernel.kind} kernel {kernel.name}")
        cfg["precision"] = str(value)
    else:
        raise CoderError(f"the template coder has no `{kind}` step")


def _configure_tile(kernel: Kernel, strategy: Strategy, args: dict[str, Any]) -> None:
    cfg = kernel.config
    allowed = _tile_keys(kernel)
    if set(args) != set(allowed):
        raise CoderError(f"`{strategy}` does not fit the {kernel.kind} kernel {kernel.name}: "
                         f"it takes {' '.join(k + '=..' for k in allowed)}")
    _require(not cfg.get("autotune"), "the kernel is autotuned")
    if uses_dot(kernel) or kernel.kind == "recurrent":
        _require(all(args[k] >= 16 for k in args), "tl.dot needs blocks of at least 16")
    if kernel.kind in ("conv", "conv_transpose") and reduces_channels(kernel):
        _require(args["BLOCK_N"] == cfg["BLOCK_N"],
                 "a conv reducing its channels holds them all in one tile: the launcher sets BLOCK_N")
    # the row's block becomes the step's, not the form's (where the two differ)
    by_form = kernel.kind == "reduce" and not is_column(kernel) and \
        reduce_emit.row_blocks(kernel) != (int(args["BLOCK"]),) * 2
    cfg.update({k: int(v) for k, v in args.items()})
    if by_form:
        cfg.pop("auto_block", None)


def _configure_rows(kernel: Kernel, rows: int) -> None:
    """Several short rows per program (config ROWS, emit/reduce_layout.py): the plain row form, where
    a row fits one block; `rows 1` goes back to one row per program."""
    cfg = kernel.config
    _require(kernel.kind == "reduce" and not is_column(kernel) and not kernel.space.get("groups"),
             "rows applies to row reductions (not column reductions or GroupNorm)")
    _require(kernel.space["red"][0] > 0, "a full reduction is one row")
    _require(0 < rows <= ROWS_MAX and rows & (rows - 1) == 0, f"rows must be a power of two up to {ROWS_MAX}")
    _require(not cfg.get("persistent") and cfg.get("split_k", 1) == 1,
             "persistent and split reductions take one row per program")
    n_cols = numel(kernel.space["traced"][slice(*kernel.space["red"])])
    _require(n_cols <= min(ROWS_MAX_COLS, reduce_emit.row_blocks(kernel)[0]),
             f"rows applies where a row of at most {ROWS_MAX_COLS} columns fits one block")
    if rows == 1:
        cfg.pop("ROWS", None)  # the config of a kernel that never took the step
    else:
        cfg["ROWS"] = rows


def _tile_keys(kernel: Kernel) -> list[str]:
    if kernel.kind in fuse.GEMM_KINDS and uses_dot(kernel):
        return ["BLOCK_M", "BLOCK_N", "BLOCK_K"]
    if kernel.kind in ("conv", "conv_transpose"):  # FMA loops: the direct form, emit/conv_fma.py
        return ["BLOCK_M", "BLOCK_N"]
    if kernel.kind == "attention" or is_column(kernel):
        return ["BLOCK_M", "BLOCK_N"]
    if kernel.kind in WALK_KINDS and not scan_emit.is_row(kernel):
        return ["BLOCK_M", "BLOCK_N"]
    return ["BLOCK"]


def _require(condition: bool, why: str) -> None:
    if not condition:
        raise CoderError(why)


def _fuse(ir: ProgramIR, what: str) -> ProgramIR:
    if what in ("attention", "softmax"):
        fused = fuse.fuse_attention(ir, what)
        if fused is None:
            chain = "matmul -> softmax -> matmul" if what == "attention" else "matmul -> softmax"
            raise CoderError(f"no {chain} chain to fuse")
        return fused
    if what == "all":
        fused, merges = fuse.fuse_all(ir)
        _require(merges >= 2, f"`fuse all` found {merges} fusion(s): take `fuse epilogue` or `fuse prologue`")
        return fused
    if what not in ("epilogue", "prologue"):
        raise CoderError(f"`fuse {what}`: the template coder fuses epilogue, prologue, all, attention or "
                         "softmax")
    fused = fuse.first_fusion(ir, (what,))
    if fused is None:
        raise CoderError(f"no {what} to fuse")
    return fused
