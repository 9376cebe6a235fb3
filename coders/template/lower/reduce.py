"""Reduction kernels: composite ops expand into body ops (softmax = max, exp, sum, div), so a manually
written softmax and `torch.softmax` end up as the same kernel once the planner has fused the pieces."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from coders.template.emit.common import FusionError
from coders.template.emit.reduce_layout import Layout
from coders.template.emit.reduce_split import splittable
from coders.template.ir import Kernel, Output, ProgramIR
from coders.template.lower.body import Body, output_dtype
from coders.template.lower.configs import (
    COLUMN_CONFIG,
    COLUMN_FULL_CONFIG,
    ROW_CONFIG,
    SHORT_ROW,
    SHORT_ROWS,
    SPLIT_MIN,
    SPLIT_PROGRAMS,
    SPLIT_SLICE,
)
from coders.template.trace import GNode, Graph, Ref, unsupported


@dataclass
class Reduction:
    """What a reduction's body builder reads: the kernel's body with the input `xv` loaded over every
    dim (`full`), the dims a reduced value keeps, the kernel's space (a builder may add to it)."""

    graph: Graph
    node: GNode
    body: Body
    xv: str
    full: list[int]
    kept: list[int]
    space: dict[str, Any]

    def extra(self, i: int, dims: list[int]) -> str | None:
        """The node's i-th argument loaded over `dims`, if it is a tensor."""
        ref = self.node.args[i] if len(self.node.args) > i else None
        return self.body.load(ref.name, dims) if isinstance(ref, Ref) else None


# A builder writes the body of one reduction op and returns its result with whether it is full-size
# (softmax, norms: one value per element) or reduced (one per kept position).
Builder = Callable[[Reduction], tuple[str, bool]]


def lower_reduce(graph: Graph, ir: ProgramIR, node: GNode) -> Kernel:
    x = node.args[0].name
    shape = list(graph.node(x).shape)
    rank = len(shape)
    d0, d1 = node.attrs["red"]
    body = Body(graph, ir, rank)
    body.space_shape = shape
    full = list(range(rank))
    kept = [d for d in full if not d0 <= d < d1]  # the dims of a reduced value
    xv = body.load(x, full)
    space: dict[str, Any] = {"input": x, "red": [d0, d1], "traced": shape}
    build = REDUCTIONS.get(node.op)
    if build is None:
        raise unsupported(f"reduction {node.op}")
    out, outputs_full = build(Reduction(graph, node, body, xv, full, kept, space))
    dims = full if outputs_full else kept
    output = Output(node.name, out, dims, output_dtype(graph, node, body.operands),
                    keepdim=bool(node.attrs.get("keepdim", False)) and not outputs_full)
    column = d1 < rank and "groups" not in space
    config = dict((COLUMN_FULL_CONFIG if outputs_full else COLUMN_CONFIG) if column else ROW_CONFIG)
    if short_rows(shape, d0, d1) and not column and "groups" not in space:
        config["ROWS"] = SHORT_ROWS
    kernel = Kernel(name=node.name, kind="reduce", space=space, operands=body.operands, body=body.ops,
                    outputs=[output], config=config)
    config["split_k"] = port_split(kernel)
    return kernel


def port_split(kernel: Kernel) -> int:
    """The port's split of a reduction that few programs would run (configs.py SPLIT_PROGRAMS): enough
    slices per row for SPLIT_PROGRAMS programs at the traced sizes (a column reduction: as many more
    as its tile is smaller than the row form's chunk), each of at least SPLIT_SLICE values;
    1 where that is fewer than SPLIT_MIN slices, or the kernel's form is not splittable (dependent
    passes such as softmax's, GroupNorm, several rows per program). A normalization of one pass's
    statistics (LayerNorm, RMSNorm) splits as a statistics and a normalize kernel
    (emit/reduce_norm_split.py); KernelBench level 1 40_LayerNorm (16 rows of 4M values) was 0.28x
    torch.compile on an H100 at one program per row."""
    cfg, shape = kernel.config, kernel.space["traced"]
    d0, d1 = kernel.space["red"]
    if cfg.get("ROWS", 1) > 1 or not splittable(kernel):
        return 1
    n_red = math.prod(shape[d0:d1])
    programs = math.prod(shape[:d0])
    width, target = 1, SPLIT_PROGRAMS  # width: the values of a reduced position a program walks
    if Layout(kernel).column:  # a column block's BLOCK_N columns, BLOCK_M rows a step
        inner = math.prod(shape[d1:])
        width = min(cfg["BLOCK_N"], inner)
        programs *= -(-inner // cfg["BLOCK_N"])
        # as many values in flight as the row form's: 4x the programs for the port's 32 x 64 tiles
        target = -(-SPLIT_PROGRAMS * ROW_CONFIG["BLOCK"] // (cfg["BLOCK_M"] * cfg["BLOCK_N"]))
    split = min(-(-target // programs), n_red * width // SPLIT_SLICE)
    if split < SPLIT_MIN:
        return 1
    try:  # a kernel whose operands a split cannot address keeps one program per row
        Layout(Kernel(**{**kernel.__dict__, "config": {**cfg, "split_k": split}})).check()
    except FusionError:
        return 1
    return split


def short_rows(shape: list[int], d0: int, d1: int) -> bool:
    """Several rows to reduce (not one full reduction), each of at most SHORT_ROW values."""
    return d0 > 0 and math.prod(shape[d0:d1]) <= SHORT_ROW


def _plain(r: Reduction) -> tuple[str, bool]:
    kind = {"amax": "max", "amin": "min"}.get(r.node.op, r.node.op)
    return r.body.op(kind, [r.xv], base=r.node.name), False


def _variance(r: Reduction) -> tuple[str, bool]:
    body, xv = r.body, r.xv
    mean = body.op("mean", [xv])
    d = body.op("sub", [xv, mean], base="centered")
    sq = body.op("mul", [d, d], base="sq")
    out = body.op("mean", [sq], {"correction": r.node.attrs["correction"]}, base="var")
    if r.node.op == "std":
        out = body.op("sqrt", [out], base=r.node.name)
    return out, False


def _logsumexp(r: Reduction) -> tuple[str, bool]:
    body, xv = r.body, r.xv
    m = body.op("max", [xv], base="row_max")
    e = body.op("exp", [body.op("sub", [xv, m], base="shifted")])
    s = body.op("sum", [e], base="denom")
    return body.op("add", [body.op("log", [s]), m], base=r.node.name), False


def _norm(r: Reduction) -> tuple[str, bool]:
    body, xv = r.body, r.xv
    return body.op("sqrt", [body.op("sum", [body.op("mul", [xv, xv], base="sq")])], base=r.node.name), False


def _softmax(r: Reduction) -> tuple[str, bool]:
    body, xv = r.body, r.xv
    m = body.op("max", [xv], base="row_max")
    e = body.op("exp", [body.op("sub", [xv, m], base="shifted")], base="numer")
    s = body.op("sum", [e], base="denom")
    return body.op("div", [e, s], base=r.node.name), True


def _log_softmax(r: Reduction) -> tuple[str, bool]:
    body, xv = r.body, r.xv
    m = body.op("max", [xv], base="row_max")
    d = body.op("sub", [xv, m], base="shifted")
    s = body.op("sum", [body.op("exp", [d])], base="denom")
    return body.op("sub", [d, body.op("log", [s])], base=r.node.name), True


def _layer_or_group_norm(r: Reduction) -> tuple[str, bool]:
    body, xv, op, a = r.body, r.xv, r.node.op, r.node.attrs
    d0, d1 = a["red"]
    param_dims = [1] if op == "group_norm" else list(range(d0, d1))
    if op == "group_norm":
        r.space["groups"] = a["groups"]
    mean = body.op("mean", [xv])
    d = body.op("sub", [xv, mean], base="centered")
    var = body.op("mean", [body.op("mul", [d, d], base="sq")], base="var")
    rstd = body.op("rsqrt", [body.op("add", [var, a["eps"]], base="var_eps")], base="rstd")
    out = body.op("mul", [d, rstd], base="normed")
    w, b = r.extra(1, param_dims), r.extra(2, param_dims)
    if w is not None:
        out = body.op("mul", [out, w], base="scaled")
    if b is not None:
        out = body.op("add", [out, b], base="shifted")
    return out, True


def _rms_norm(r: Reduction) -> tuple[str, bool]:
    body, xv, a = r.body, r.xv, r.node.attrs
    d0, d1 = a["red"]
    eps = a["eps"] if a["eps"] is not None else torch.finfo(r.graph.node(r.node.args[0].name).dtype).eps
    ms = body.op("mean", [body.op("mul", [xv, xv], base="sq")], base="mean_sq")
    rstd = body.op("rsqrt", [body.op("add", [ms, eps], base="ms_eps")], base="rstd")
    out = body.op("mul", [xv, rstd], base="normed")
    w = r.extra(1, list(range(d0, d1)))
    if w is not None:
        out = body.op("mul", [out, w], base="scaled")
    return out, True


def _normalize(r: Reduction) -> tuple[str, bool]:
    body, xv = r.body, r.xv
    norm = body.op("sqrt", [body.op("sum", [body.op("mul", [xv, xv], base="sq")])], base="norm")
    return body.op("div", [xv, body.op("maximum", [norm, r.node.attrs["eps"]], base="norm_eps")],
                   base=r.node.name), True


def _cosine_similarity(r: Reduction) -> tuple[str, bool]:
    body, xv, eps = r.body, r.xv, r.node.attrs["eps"]
    yv = body.load(r.node.args[1].name, r.full)
    dot = body.op("sum", [body.op("mul", [xv, yv], base="prod")], base="dot")
    n1 = body.op("sqrt", [body.op("sum", [body.op("mul", [xv, xv], base="sq1")])], base="norm1")
    n2 = body.op("sqrt", [body.op("sum", [body.op("mul", [yv, yv], base="sq2")])], base="norm2")
    den = body.op("mul", [body.op("maximum", [n1, eps]), body.op("maximum", [n2, eps])], base="den")
    return body.op("div", [dot, den], base=r.node.name), False


def _class_rows(r: Reduction) -> tuple[str, bool]:
    """Cross entropy or NLL per row of (N, C) logits with class-index targets."""
    body, xv, op, a = r.body, r.xv, r.node.op, r.node.attrs
    t = r.extra(1, r.kept)
    col = body.op("ridx", [], base="col")
    picked = body.op("sum", [body.op("where", [body.op("eq", [col, t], base="is_target"), xv, 0.0],
                                     base="target_logit")], base="picked")
    if op == "ce_rows":
        m = body.op("max", [xv], base="row_max")
        e = body.op("exp", [body.op("sub", [xv, m], base="shifted")])
        lse = body.op("add", [body.op("log", [body.op("sum", [e], base="denom")]), m], base="lse")
        loss = body.op("sub", [lse, picked], base="nll")
        eps = a.get("label_smoothing", 0.0)
        if eps:
            # label smoothing mixes in the loss against the uniform distribution
            smooth = body.op("sub", [lse, body.op("mean", [xv], base="mean_logit")], base="smooth")
            loss = body.op("add", [body.op("mul", [loss, 1.0 - eps]), body.op("mul", [smooth, eps])],
                           base="loss")
    else:
        loss = body.op("neg", [picked], base="loss")
    valid = body.op("ne", [t, a["ignore_index"]], base="valid")
    return body.op("where", [valid, loss, 0.0], base=r.node.name), False


def _masked_mean(r: Reduction) -> tuple[str, bool]:
    body, xv = r.body, r.xv
    t = r.extra(1, r.full)
    valid = body.op("cast", [body.op("ne", [t, r.node.attrs["ignore_index"]], base="valid")],
                    {"dtype": "float32"}, base="valid_f")
    total = body.op("sum", [xv], base="total")
    return body.op("div", [total, body.op("sum", [valid], base="count")], base=r.node.name), False


def _sum_div(r: Reduction) -> tuple[str, bool]:
    n = r.body.load(r.node.args[1].name, [])
    return r.body.op("div", [r.body.op("sum", [r.xv], base="total"), n], base=r.node.name), False


# Every reduction op the trace makes (trace/reductions.py), by canonical name: its body builder.
REDUCTIONS: dict[str, Builder] = {
    **dict.fromkeys(("sum", "amax", "amin", "mean"), _plain),
    "var": _variance, "std": _variance,
    "logsumexp": _logsumexp,
    "norm": _norm,
    "softmax": _softmax,
    "log_softmax": _log_softmax,
    "layer_norm": _layer_or_group_norm, "group_norm": _layer_or_group_norm,
    "rms_norm": _rms_norm,
    "normalize": _normalize,
    "cosine_similarity": _cosine_similarity,
    "ce_rows": _class_rows, "nll_rows": _class_rows,
    "masked_mean": _masked_mean,
    "sum_div": _sum_div,
}
