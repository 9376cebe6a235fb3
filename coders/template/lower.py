"""Lower the canonical op graph to the IR: one kernel per op, Python steps for everything else.

Composite ops expand here into body ops (softmax = max, exp, sum, div), so a manually written
softmax and `torch.softmax` end up as the same kernel once the planner has fused the pieces.
"""

from __future__ import annotations

from typing import Any

import torch

from coders.template import pooling, recurrent, scans
from coders.template.conv_lower import lower_conv
from coders.template.conv_transpose_lower import lower_conv_transpose
from coders.template.ir import Kernel, Op, Operand, Output, ProgramIR, PyStep, self_path
from coders.template.trace import GNode, Graph, Ref, Uncomputable, render, unsupported

# Port defaults: simple, safe blocks; the planner tunes from here.
POINTWISE_CONFIG = {"BLOCK": 1024, "num_warps": 4}
# columns per chunk; a row that fits is read once; auto_block: the emitter sizes both by the kernel's
# form (emit/reduce.py row_blocks) until a `tile` step sets BLOCK
ROW_CONFIG = {"BLOCK": 8192, "split_k": 1, "auto_block": True}
COLUMN_CONFIG = {"BLOCK_M": 32, "BLOCK_N": 64, "num_warps": 4, "split_k": 1}  # (reduced rows, columns)
# a full-size output (softmax over channels): up to 128 reduced rows of 32 columns in registers, read
# once (softmax_channels_fp16, H200: 1.19 ms at 2 warps, 1.20 at 4; 2.77 ms for 64-row chunks)
COLUMN_FULL_CONFIG = {"BLOCK_M": 128, "BLOCK_N": 32, "num_warps": 2, "split_k": 1}
MATMUL_CONFIG = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 1, "num_warps": 4,
                 "num_stages": 3, "split_k": 1, "precision": "ieee"}
# 16-bit operands run on the tensor cores: bigger tiles keep them busy
MATMUL_CONFIG_16 = {**MATMUL_CONFIG, "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 8}
ATTENTION_CONFIG = {"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4, "num_stages": 2, "precision": "ieee"}
ATTENTION_CONFIG_16 = {**ATTENTION_CONFIG, "BLOCK_M": 128, "num_warps": 8}
HALF = (torch.float16, torch.bfloat16)


def lower(graph: Graph) -> ProgramIR:
    values: dict[str, dict[str, Any]] = {}
    for node in graph.nodes:
        values[node.name] = {"shape": list(node.shape) if node.is_tensor else None,
                             "dtype": _dtype_name(node.dtype) if node.is_tensor else None}
    ir = ProgramIR(task=graph.task, args=list(graph.inputs), values=values, steps=[],
                   result=_render_result(graph.result))
    used = _used_names(graph)
    for node in graph.nodes:
        if node.kind == "input" or node.name not in used:
            continue
        for arg in node.args:
            if isinstance(arg, Uncomputable):
                raise unsupported(arg.what)
        if node.kind == "param":
            ir.steps.append(PyStep(outs=[node.name], expr=self_path(node.attrs["path"]), uses=[]))
        elif node.kind == "py" and "scalar" in node.attrs:
            _check_scalar_uses(graph, node)  # kernels take it as a literal: no step
        elif node.kind == "py":
            ir.steps.append(PyStep(outs=[node.name], expr=node.expr, uses=node.refs(),
                                   alias_of=node.alias_of, library=node.library))
        elif node.kind == "pw":
            ir.steps.append(_pointwise(graph, ir, node))
        elif node.kind == "red":
            ir.steps.append(_reduce(graph, ir, node))
        elif node.kind == "matmul":
            ir.steps.append(_matmul(graph, ir, node))
        elif node.kind == "conv":
            ir.steps.append(lower_conv(graph, ir, node))
        elif node.kind == "attention":
            ir.steps.append(_attention(graph, ir, node))
        elif node.kind == "conv_transpose":
            ir.steps.append(lower_conv_transpose(graph, ir, node, Body(graph, ir, len(node.shape))))
        elif node.kind == "pool":
            ir.steps.append(pooling.lower_pool(graph, node, used))
        elif node.kind == "cat":
            ir.steps.append(_cat(graph, node))
        elif node.kind == "recurrent":
            ir.steps.append(recurrent.lower_recurrent(graph, node, used))
        elif node.kind in ("pool_indices", "recurrent_state"):
            continue  # a second output of its pool's or recurrence's kernel
        elif node.kind in scans.WALK_KINDS:
            ir.steps.append(scans.lower_walk(graph, node))
        elif node.kind in ("flip", "zeros"):
            raise unsupported(f"{node.op} (other than around a cumsum: a reverse or an exclusive scan)")
        else:
            raise unsupported(f"node kind {node.kind}")
    ir.patterns = _attention_patterns(graph)
    return ir


def _check_scalar_uses(graph: Graph, node: GNode) -> None:
    """A 0-d constant is a literal in the elementwise ops and reductions that read it; anything else
    would need the tensor itself (a view of it, the forward's result, a kernel over it alone)."""
    what = f"torch.tensor({render(node.attrs['scalar'])}) in forward"
    if node.name in {r.name for r in _refs_in(graph.result)}:
        raise unsupported(f"{what} returned as a result")
    for user in graph.users(node.name):
        tensors = [a for a in user.args if isinstance(a, Ref) and graph.node(a.name).is_tensor]
        if user.kind not in ("pw", "red") or (user.kind == "red" and user.args[0] == Ref(node.name)):
            raise unsupported(f"{what} used by a {user.kind} {user.op or user.expr} (only elementwise "
                              "ops and reductions read it, as a literal)")
        if all("scalar" in graph.node(t.name).attrs for t in tensors):
            raise unsupported(f"{what} in an elementwise {user.op} of constants only")


def _render_result(result: Any) -> str:
    if isinstance(result, Uncomputable):
        raise unsupported(result.what)
    if isinstance(result, Ref):
        return result.name
    if isinstance(result, tuple | list):
        return render(tuple(result) if isinstance(result, tuple) else list(result))
    raise unsupported(f"returning {type(result).__name__}")


def _used_names(graph: Graph) -> set[str]:
    """Nodes the result depends on (dead code in the reference is dropped)."""
    index = {n.name: n for n in graph.nodes}
    todo = [a.name for a in _refs_in(graph.result)]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        todo.extend(index[name].refs())
    return seen


def _refs_in(value: Any) -> list[Ref]:
    if isinstance(value, Ref):
        return [value]
    if isinstance(value, tuple | list):
        return [r for v in value for r in _refs_in(v)]
    return []


def _dtype_name(dtype: torch.dtype | None) -> str | None:
    return str(dtype).removeprefix("torch.") if dtype is not None else None


# --------------------------------------------------------------------------------------------------
# body building
# --------------------------------------------------------------------------------------------------

class Body:
    """Collects operands and SSA ops for one kernel."""

    def __init__(self, graph: Graph, ir: ProgramIR, rank: int) -> None:
        self.graph = graph
        self.ir = ir
        self.rank = rank
        self.operands: list[Operand] = []
        self.ops: list[Op] = []
        self.names: set[str] = set()

    def fresh(self, base: str) -> str:
        name, i = base, 1
        while name in self.names:
            i += 1
            name = f"{base}_{i}"
        self.names.add(name)
        return name

    def load(self, value: str, dims: list[int] | None = None) -> str | bool | int | float:
        """Load a tensor (dims default to right-aligned broadcasting) or take a Python scalar; a 0-d
        constant (torch.tensor(0.5) in forward) is its literal value."""
        node = self.graph.node(value)
        if "scalar" in node.attrs:
            return node.attrs["scalar"]
        scalar = not node.is_tensor
        if dims is None:
            dims = [] if scalar else broadcast_dims(self.space_shape, list(node.shape))
        for i, o in enumerate(self.operands):
            if o.value == value and o.dims == dims:
                return next(op.out for op in self.ops if op.op == "load" and op.args == [i])
        integer = bool(node.is_tensor and not node.dtype.is_floating_point)
        self.operands.append(Operand(value, dims, scalar=scalar, integer=integer))
        name = self.fresh(value)
        self.ops.append(Op(name, "load", [len(self.operands) - 1]))
        return name

    def op(self, op: str, args: list[Any], attrs: dict | None = None, base: str | None = None) -> str:
        name = self.fresh(base or op)
        self.ops.append(Op(name, op, list(args), dict(attrs or {})))
        return name

    def arg(self, value: Any) -> Any:
        """A graph argument as a body argument: load tensors/scalars, keep literals."""
        if isinstance(value, Ref):
            return self.load(value.name)
        if value is None or isinstance(value, bool | int | float):
            return value
        raise unsupported(f"argument {value!r}")

    space_shape: list[int] = []


def broadcast_dims(space: list[int], shape: list[int]) -> list[int]:
    """Dims of `space` an operand of `shape` spans under right-aligned broadcasting."""
    offset = len(space) - len(shape)
    if offset < 0:
        raise unsupported("an operand of higher rank than its result")
    dims = []
    for i, size in enumerate(shape):
        if size == space[offset + i] or size != 1:
            if size != space[offset + i]:
                raise unsupported(f"broadcasting {shape} to {space}")
            dims.append(offset + i)
    return dims


def _output_dtype(graph: Graph, node: GNode, operands: list[Operand]) -> str:
    """`like:<operand>` when the result's dtype follows an input, else the traced dtype."""
    for o in operands:
        src = graph.node(o.value)
        if src.is_tensor and src.dtype == node.dtype:
            return f"like:{o.value}"
    return _dtype_name(node.dtype)


def _loss(body: Body, node: GNode) -> str:
    """Elementwise loss terms, written as primitive ops (torch's formulas)."""
    x, t = (body.arg(a) for a in node.args)
    op, a = node.op, node.attrs
    name = node.name
    if op in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"):
        d = body.op("sub", [x, t], base="diff")
        if op == "mse_loss":
            return body.op("mul", [d, d], base=name)
        ad = body.op("abs", [d], base="abs_diff")
        if op == "l1_loss":
            return ad
        limit = a.get("beta", 1.0) if op == "smooth_l1_loss" else a.get("delta", 1.0)
        if limit == 0:
            return ad
        sq = body.op("mul", [body.op("mul", [ad, ad], base="sq"), 0.5], base="half_sq")
        if op == "smooth_l1_loss":
            inside = body.op("div", [sq, limit], base="quadratic")
            outside = body.op("sub", [ad, 0.5 * limit], base="linear")
        else:
            inside = sq
            outside = body.op("mul", [body.op("sub", [ad, 0.5 * limit]), limit], base="linear")
        return body.op("where", [body.op("lt", [ad, limit], base="small"), inside, outside], base=name)
    if op == "kl_div":
        if a.get("log_target"):
            return body.op("mul", [body.op("exp", [t]), body.op("sub", [t, x])], base=name)
        # xlogy(t, t) - t * x, with 0 * log(0) = 0
        positive = body.op("gt", [t, 0.0], base="positive")
        safe = body.op("where", [positive, t, 1.0], base="safe_t")
        xlogy = body.op("where", [positive, body.op("mul", [t, body.op("log", [safe])]), 0.0],
                        base="xlogy")
        return body.op("sub", [xlogy, body.op("mul", [t, x])], base=name)
    if op == "binary_cross_entropy":
        # torch clamps each log at -100 so that p = 0 or 1 gives a finite loss
        log_p = body.op("maximum", [body.op("log", [x]), -100.0], base="log_p")
        log_q = body.op("maximum", [body.op("log", [body.op("sub", [1.0, x])]), -100.0], base="log_q")
        pos = body.op("mul", [t, log_p])
        neg = body.op("mul", [body.op("sub", [1.0, t]), log_q])
        return body.op("neg", [body.op("add", [pos, neg])], base=name)
    if op == "binary_cross_entropy_with_logits":
        # max(x, 0) - x * t + log(1 + exp(-|x|)): no overflow for large |x|
        decay = body.op("exp", [body.op("neg", [body.op("abs", [x])])])
        soft = body.op("log", [body.op("add", [1.0, decay])], base="softplus")
        relu = body.op("relu", [x])
        return body.op("add", [body.op("sub", [relu, body.op("mul", [x, t])]), soft], base=name)
    raise unsupported(f"loss {op}")


LOSSES = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div", "binary_cross_entropy",
          "binary_cross_entropy_with_logits")


def _pw_op(body: Body, node: GNode) -> str:
    """The body op(s) for one pointwise graph node."""
    op, attrs = node.op, dict(node.attrs)
    if op in LOSSES:
        return _loss(body, node)
    if op == "pow":
        base, exponent = node.args
        if not isinstance(exponent, Ref):
            attrs["exponent"] = exponent
            return body.op("pow", [body.arg(base), 0], attrs, base=node.name)
        if not isinstance(base, Ref):
            attrs["base"] = float(base)
            return body.op("pow", [0, body.arg(exponent)], attrs, base=node.name)
    if op == "clamp" and attrs.get("tensor_bounds"):
        args = [body.arg(a) if a is not None else "None" for a in node.args]
        return body.op(op, args, attrs, base=node.name)
    return body.op(op, [body.arg(a) for a in node.args], attrs, base=node.name)


def _pointwise(graph: Graph, ir: ProgramIR, node: GNode) -> Kernel:
    body = Body(graph, ir, len(node.shape))
    body.space_shape = list(node.shape)
    out = _pw_op(body, node)
    tensors = [a.name for a in node.args if isinstance(a, Ref) and graph.node(a.name).is_tensor]
    same = [t for t in tensors if list(graph.node(t).shape) == list(node.shape)]
    shape_of = same[:1] or tensors
    if not shape_of:
        raise unsupported(f"{node.op} with no tensor input")
    output = Output(node.name, out, list(range(len(node.shape))), _output_dtype(graph, node, body.operands))
    return Kernel(name=node.name, kind="pointwise",
                  space={"shape_of": shape_of, "traced": list(node.shape)},
                  operands=body.operands, body=body.ops, outputs=[output], config=dict(POINTWISE_CONFIG))


# --------------------------------------------------------------------------------------------------
# reductions
# --------------------------------------------------------------------------------------------------

def _reduce(graph: Graph, ir: ProgramIR, node: GNode) -> Kernel:
    x = node.args[0].name
    shape = list(graph.node(x).shape)
    rank = len(shape)
    d0, d1 = node.attrs["red"]
    body = Body(graph, ir, rank)
    body.space_shape = shape
    full = list(range(rank))
    kept = [d for d in full if not d0 <= d < d1]  # the dims of a reduced value
    xv = body.load(x, full)
    op, a = node.op, node.attrs
    outputs_full = False
    space: dict[str, Any] = {"input": x, "red": [d0, d1], "traced": shape}

    def extra(i: int, dims: list[int]) -> str | None:
        ref = node.args[i] if len(node.args) > i else None
        return body.load(ref.name, dims) if isinstance(ref, Ref) else None

    if op in ("sum", "amax", "amin", "mean"):
        kind = {"amax": "max", "amin": "min"}.get(op, op)
        out = body.op(kind, [xv], base=node.name)
    elif op in ("var", "std"):
        mean = body.op("mean", [xv])
        d = body.op("sub", [xv, mean], base="centered")
        sq = body.op("mul", [d, d], base="sq")
        out = body.op("mean", [sq], {"correction": a["correction"]}, base="var")
        if op == "std":
            out = body.op("sqrt", [out], base=node.name)
    elif op == "logsumexp":
        m = body.op("max", [xv], base="row_max")
        e = body.op("exp", [body.op("sub", [xv, m], base="shifted")])
        s = body.op("sum", [e], base="denom")
        out = body.op("add", [body.op("log", [s]), m], base=node.name)
    elif op == "norm":
        out = body.op("sqrt", [body.op("sum", [body.op("mul", [xv, xv], base="sq")])], base=node.name)
    elif op == "softmax":
        m = body.op("max", [xv], base="row_max")
        e = body.op("exp", [body.op("sub", [xv, m], base="shifted")], base="numer")
        s = body.op("sum", [e], base="denom")
        out = body.op("div", [e, s], base=node.name)
        outputs_full = True
    elif op == "log_softmax":
        m = body.op("max", [xv], base="row_max")
        d = body.op("sub", [xv, m], base="shifted")
        s = body.op("sum", [body.op("exp", [d])], base="denom")
        out = body.op("sub", [d, body.op("log", [s])], base=node.name)
        outputs_full = True
    elif op in ("layer_norm", "group_norm"):
        param_dims = [1] if op == "group_norm" else list(range(d0, d1))
        if op == "group_norm":
            space["groups"] = a["groups"]
        mean = body.op("mean", [xv])
        d = body.op("sub", [xv, mean], base="centered")
        var = body.op("mean", [body.op("mul", [d, d], base="sq")], base="var")
        rstd = body.op("rsqrt", [body.op("add", [var, a["eps"]], base="var_eps")], base="rstd")
        out = body.op("mul", [d, rstd], base="normed")
        w, b = extra(1, param_dims), extra(2, param_dims)
        if w is not None:
            out = body.op("mul", [out, w], base="scaled")
        if b is not None:
            out = body.op("add", [out, b], base="shifted")
        outputs_full = True
    elif op == "rms_norm":
        eps = a["eps"] if a["eps"] is not None else torch.finfo(graph.node(x).dtype).eps
        ms = body.op("mean", [body.op("mul", [xv, xv], base="sq")], base="mean_sq")
        rstd = body.op("rsqrt", [body.op("add", [ms, eps], base="ms_eps")], base="rstd")
        out = body.op("mul", [xv, rstd], base="normed")
        w = extra(1, list(range(d0, d1)))
        if w is not None:
            out = body.op("mul", [out, w], base="scaled")
        outputs_full = True
    elif op == "normalize":
        norm = body.op("sqrt", [body.op("sum", [body.op("mul", [xv, xv], base="sq")])], base="norm")
        out = body.op("div", [xv, body.op("maximum", [norm, a["eps"]], base="norm_eps")],
                      base=node.name)
        outputs_full = True
    elif op == "cosine_similarity":
        yv = body.load(node.args[1].name, full)
        dot = body.op("sum", [body.op("mul", [xv, yv], base="prod")], base="dot")
        n1 = body.op("sqrt", [body.op("sum", [body.op("mul", [xv, xv], base="sq1")])], base="norm1")
        n2 = body.op("sqrt", [body.op("sum", [body.op("mul", [yv, yv], base="sq2")])], base="norm2")
        den = body.op("mul", [body.op("maximum", [n1, a["eps"]]), body.op("maximum", [n2, a["eps"]])],
                      base="den")
        out = body.op("div", [dot, den], base=node.name)
    elif op in ("ce_rows", "nll_rows"):
        t = extra(1, kept)
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
        out = body.op("where", [valid, loss, 0.0], base=node.name)
    elif op == "masked_mean":
        t = extra(1, full)
        valid = body.op("cast", [body.op("ne", [t, a["ignore_index"]], base="valid")],
                        {"dtype": "float32"}, base="valid_f")
        total = body.op("sum", [xv], base="total")
        out = body.op("div", [total, body.op("sum", [valid], base="count")], base=node.name)
    elif op == "sum_div":
        n = body.load(node.args[1].name, [])
        out = body.op("div", [body.op("sum", [xv], base="total"), n], base=node.name)
    else:
        raise unsupported(f"reduction {op}")
    dims = full if outputs_full else kept
    output = Output(node.name, out, dims, _output_dtype(graph, node, body.operands),
                    keepdim=bool(a.get("keepdim", False)) and not outputs_full)
    column = d1 < rank and "groups" not in space
    config = dict((COLUMN_FULL_CONFIG if outputs_full else COLUMN_CONFIG) if column else ROW_CONFIG)
    return Kernel(name=node.name, kind="reduce", space=space, operands=body.operands, body=body.ops,
                  outputs=[output], config=config)


def _cat(graph: Graph, node: GNode) -> Kernel:
    """torch.cat: a copy of each input into its slice of the output (emit/cat.py)."""
    parts = [a.name for a in node.args]
    full = list(range(len(node.shape)))
    dtypes = {graph.node(p).dtype for p in parts}
    if dtypes != {node.dtype}:
        raise unsupported("cat of tensors of different dtypes")
    return Kernel(name=node.name, kind="cat", space={"dim": node.attrs["dim"], "traced": list(node.shape)},
                  operands=[Operand(p, full) for p in parts], body=[],
                  outputs=[Output(node.name, "", full, f"like:{parts[0]}")], config=dict(POINTWISE_CONFIG))


# --------------------------------------------------------------------------------------------------
# matmul and attention
# --------------------------------------------------------------------------------------------------

def _matmul(graph: Graph, ir: ProgramIR, node: GNode) -> Kernel:
    a, b, bias = node.args
    form = node.attrs["form"]
    if form == "mm" and bias is None and graph.node(b.name).shape[-1] == 1:
        return _matrix_vector(graph, ir, node)
    out_shape = list(node.shape)
    if form == "bmm":
        sa, sb = graph.node(a.name).shape, graph.node(b.name).shape
        if sa[:-2] != sb[:-2]:
            raise unsupported("batched matmul with broadcast batch dims")
    body = Body(graph, ir, len(out_shape))
    body.space_shape = out_shape
    acc = body.op("acc", [], base="acc")
    out = acc
    if isinstance(bias, Ref):
        out = body.op("add", [out, body.load(bias.name)], base="biased")
    dtype = _dtype_name(node.dtype)
    output = Output(node.name, out, list(range(len(out_shape))),
                    f"like:{a.name}" if graph.node(a.name).dtype == node.dtype else dtype)
    dtype_a = graph.node(a.name).dtype
    space = {"a": a.name, "b": b.name, "form": form, "traced": out_shape, "dtype": _dtype_name(dtype_a)}
    config = MATMUL_CONFIG_16 if dtype_a in HALF else MATMUL_CONFIG
    return Kernel(name=node.name, kind="matmul", space=space, operands=body.operands, body=body.ops,
                  outputs=[output], config=dict(config))


def _matrix_vector(graph: Graph, ir: ProgramIR, node: GNode) -> Kernel:
    """A product with a (K, 1) vector (KernelBench 4) as a row reduction, out[..., m, 0] =
    sum_k a[..., m, k] * b[k, 0]: a GEMM tile would spend all but one of its BLOCK_N columns on
    nothing and launch only M / BLOCK_M programs, where a program per row streams A once. Like
    broadcasting, the traced shape decides: b has one column at every size."""
    a, b = node.args[0].name, node.args[1].name
    shape = list(graph.node(a).shape)
    rank = len(shape)
    body = Body(graph, ir, rank)
    body.space_shape = shape
    products = body.op("mul", [body.load(a, list(range(rank))), body.load(b, [rank - 1])], base="products")
    total = body.op("sum", [products], base=node.name)
    output = Output(node.name, total, list(range(rank - 1)), _output_dtype(graph, node, body.operands),
                    keepdim=True)
    return Kernel(name=node.name, kind="reduce", space={"input": a, "red": [rank - 1, rank], "traced": shape},
                  operands=body.operands, body=body.ops, outputs=[output], config=dict(ROW_CONFIG))


def _attention(graph: Graph, ir: ProgramIR, node: GNode) -> Kernel:
    q, k, v = (a.name for a in node.args)
    body = [Op("attn", "acc")]
    output = Output(node.name, "attn", list(range(len(node.shape))), f"like:{q}")
    space = {"q": q, "k": k, "v": v, "k_transposed": False, "causal": node.attrs["causal"],
             "scale": node.attrs["scale"], "traced": list(node.shape)}
    config = ATTENTION_CONFIG_16 if graph.node(q).dtype in HALF else ATTENTION_CONFIG
    return Kernel(name=node.name, kind="attention", space=space, operands=[], body=body,
                  outputs=[output], config=dict(config))


def attention_kernel(name: str, q: str, kt: str, v: str | None, out: str, scale: float | str | None,
                     traced: list[int], causal: bool = False, half: bool = False,
                     bias: str | None = None) -> Kernel:
    """The flash kernel that replaces a matmul -> softmax -> matmul pattern (attention), or, with no
    `v`, a matmul -> softmax pattern whose probabilities are the output (the scores are computed
    twice: once for the row max and sum, once to write the normalized row)."""
    space = {"q": q, "k": kt, "v": v, "k_transposed": True, "causal": causal, "scale": scale,
             "bias": bias, "traced": traced}
    return Kernel(name=name, kind="attention", space=space, operands=[], body=[Op("attn", "acc")],
                  outputs=[Output(out, "attn", list(range(len(traced))), f"like:{q}")],
                  config=dict(ATTENTION_CONFIG_16 if half else ATTENTION_CONFIG))


def _attention_patterns(graph: Graph) -> list[dict[str, Any]]:
    """Score chains that end in a softmax over the last dim, intermediates unshared:
    `attention`: matmul(q, kt) [* or / a constant] [causal mask] -> softmax(-1) -> matmul(p, v);
    `softmax`: matmul(q, kt) [* a constant] [+ a bias tensor] -> softmax(-1), the probabilities
    being the output (bmm_softmax: the scores never reach global memory)."""
    patterns = []
    for p in graph.nodes:
        if not (p.kind == "red" and p.op == "softmax" and p.attrs["red"][0] == len(p.shape) - 1):
            continue
        scores = _score_chain(graph, graph.node(p.args[0].name))
        if scores is None:
            continue
        users = graph.users(p.name)
        mm2 = users[0] if len(users) == 1 else None
        if mm2 is not None and mm2.kind == "matmul" and mm2.attrs["form"] == "bmm" and \
                mm2.args[2] is None and mm2.args[0].name == p.name and scores["bias"] is None:
            patterns.append({**scores, "kind": "attention", "v": mm2.args[1].name, "out": mm2.name,
                             "inner": scores["inner"] + [p.name], "traced": list(mm2.shape)})
        elif not scores["causal"] and graph.node(scores["q"]).dtype == p.dtype:
            patterns.append({**scores, "kind": "softmax", "v": None, "out": p.name,
                             "traced": list(p.shape)})
    return patterns


def _score_chain(graph: Graph, s: GNode) -> dict[str, Any] | None:
    """Walk a softmax's input back to the matmul that made the scores: [causal where] [+ bias]
    [* or / scale] bmm(q, kt). None if it is not such a chain or an intermediate has other users."""
    chain = []
    causal = False
    if s.kind == "pw" and s.op == "where" and isinstance(s.args[0], Ref) and \
            graph.node(s.args[0].name).attrs.get("causal_mask") and s.args[1] == float("-inf"):
        causal = True
        chain.append(s.name)
        s = graph.node(s.args[2].name)
    bias = None
    if s.kind == "pw" and s.op == "add" and len(s.args) == 2 and all(isinstance(a, Ref) for a in s.args):
        scores, other = graph.node(s.args[0].name), graph.node(s.args[1].name)
        if not (other.is_tensor and scores.shape == s.shape and len(other.shape) <= len(s.shape)):
            return None
        bias = other.name
        chain.append(s.name)
        s = scores
    scale: float | str = 1.0
    if s.kind == "pw" and s.op in ("mul", "div") and isinstance(s.args[0], Ref):
        factor = s.args[1]
        if isinstance(factor, int | float) and not isinstance(factor, bool):
            scale = float(factor) if s.op == "mul" else 1.0 / float(factor)
        elif isinstance(factor, Ref) and not graph.node(factor.name).is_tensor and s.op == "mul":
            scale = factor.name
        else:
            return None
        chain.append(s.name)
        s = graph.node(s.args[0].name)
    if s.kind != "matmul" or s.attrs["form"] != "bmm" or s.args[2] is not None:
        return None
    chain.append(s.name)
    if any(len(graph.users(name)) != 1 for name in chain):
        return None
    return {"q": s.args[0].name, "kt": s.args[1].name, "scale": scale, "causal": causal, "bias": bias,
            "inner": chain[::-1]}
