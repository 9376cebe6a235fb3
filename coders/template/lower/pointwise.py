"""Elementwise kernels: one pointwise op (losses written as primitive ops, torch's formulas), and
torch.cat as a copy of each input into its slice of the output."""

from __future__ import annotations

from coders.template.ir import Kernel, Operand, Output, ProgramIR
from coders.template.lower.body import Body, output_dtype
from coders.template.lower.configs import POINTWISE_CONFIG
from coders.template.trace import GNode, Graph, Ref, unsupported


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


def lower_pointwise(graph: Graph, ir: ProgramIR, node: GNode) -> Kernel:
    body = Body(graph, ir, len(node.shape))
    body.space_shape = list(node.shape)
    out = _pw_op(body, node)
    tensors = [a.name for a in node.args if isinstance(a, Ref) and graph.node(a.name).is_tensor]
    same = [t for t in tensors if list(graph.node(t).shape) == list(node.shape)]
    shape_of = same[:1] or tensors
    if not shape_of:
        raise unsupported(f"{node.op} with no tensor input")
    output = Output(node.name, out, list(range(len(node.shape))), output_dtype(graph, node, body.operands))
    return Kernel(name=node.name, kind="pointwise",
                  space={"shape_of": shape_of, "traced": list(node.shape)},
                  operands=body.operands, body=body.ops, outputs=[output], config=dict(POINTWISE_CONFIG))


def lower_cat(graph: Graph, node: GNode) -> Kernel:
    """torch.cat: a copy of each input into its slice of the output (emit/cat.py)."""
    parts = [a.name for a in node.args]
    full = list(range(len(node.shape)))
    dtypes = {graph.node(p).dtype for p in parts}
    if dtypes != {node.dtype}:
        raise unsupported("cat of tensors of different dtypes")
    return Kernel(name=node.name, kind="cat", space={"dim": node.attrs["dim"], "traced": list(node.shape)},
                  operands=[Operand(p, full) for p in parts], body=[],
                  outputs=[Output(node.name, "", full, f"like:{parts[0]}")], config=dict(POINTWISE_CONFIG))
