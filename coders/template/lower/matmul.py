"""Matmul and attention kernels, and the score chains (matmul -> softmax [-> matmul]) that `fuse
attention` turns into one flash kernel."""

from __future__ import annotations

import math
from typing import Any

from coders.template.ir import Kernel, Op, Output, ProgramIR
from coders.template.lower.body import Body, dtype_name, output_dtype
from coders.template.lower.configs import (
    ATTENTION_CONFIG,
    ATTENTION_CONFIG_16,
    HALF,
    MATMUL_CONFIG,
    MATMUL_CONFIG_16,
    ROW_CONFIG,
    SPLIT_MAX,
    SPLIT_MIN_K,
    SPLIT_PROGRAMS,
    SPLIT_SMS,
)
from coders.template.trace import GNode, Graph, Ref, unsupported


def lower_matmul(graph: Graph, ir: ProgramIR, node: GNode) -> Kernel:
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
    dtype = dtype_name(node.dtype)
    output = Output(node.name, out, list(range(len(out_shape))),
                    f"like:{a.name}" if graph.node(a.name).dtype == node.dtype else dtype)
    dtype_a = graph.node(a.name).dtype
    space = {"a": a.name, "b": b.name, "form": form, "traced": out_shape, "dtype": dtype_name(dtype_a)}
    config = dict(MATMUL_CONFIG_16 if dtype_a in HALF else MATMUL_CONFIG)
    sa = graph.node(a.name).shape
    batch = math.prod(sa[:-2]) if form == "bmm" else 1
    config["split_k"] = port_split_k(batch, math.prod(out_shape) // batch // out_shape[-1], out_shape[-1],
                                     sa[-1], config)
    # misaligned K: an fp32 launcher on tensor-core dots zero-pads it (emit/matmul/layout.py k_padding)
    if dtype_a not in HALF and (sa[-1] % 4 if form == "linear" else sa[-1] % config["BLOCK_K"]):
        config["pad_k"] = True
    return Kernel(name=node.name, kind="matmul", space=space, operands=body.operands, body=body.ops,
                  outputs=[output], config=config)


def port_split_k(batch: int, m: int, n: int, k: int, config: dict[str, Any]) -> int:
    """K slices for the port (configs.py SPLIT_*): 1 unless the output has fewer tiles than SMs; then
    the power of two that makes SPLIT_PER_SM programs per SM, as far as each slice keeps SPLIT_MIN_K
    of K. Decided at the traced sizes: a program run at other sizes keeps its split."""
    tiles = batch * -(-m // config["BLOCK_M"]) * -(-n // config["BLOCK_N"])
    if tiles >= SPLIT_SMS:
        return 1
    split = 1
    while tiles * split < SPLIT_PROGRAMS and k // (2 * split) >= SPLIT_MIN_K and split < SPLIT_MAX:
        split *= 2
    return split


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
    output = Output(node.name, total, list(range(rank - 1)), output_dtype(graph, node, body.operands),
                    keepdim=True)
    return Kernel(name=node.name, kind="reduce", space={"input": a, "red": [rank - 1, rank], "traced": shape},
                  operands=body.operands, body=body.ops, outputs=[output], config=dict(ROW_CONFIG))


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


def attention_patterns(graph: Graph) -> list[dict[str, Any]]:
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
