"""An attention node as the flash kernel where its tiles fit in shared memory, else as the chain it
stands for.

The flash kernel (emit/attention.py) holds a whole head-dim row of q, k and v in each tile, so its
shared memory grows with the head dim: KernelBench level-1 97_ScaledDotProductAttention (fp32, D =
1024) asked an H100 for 1572864 bytes of the 232448 one program may have, and got no program. The
port keeps the flash kernel's own config where it fits (those programs keep their bytes), takes
narrower tiles where those fit, and otherwise splits the node into the ops it stands for, each a
kernel the coder already has: scores = q @ k^T (a bmm, at the matmuls' precision: tf32x3 for fp32),
times the scale, [causal mask], softmax over the keys, @ v.

The fit is decided at the traced head dims. The tiles' head-dim blocks are the powers of two at or
above them, which only shrink at the verifier's other sizes (drawn below the declared ones,
mtmc/verify/protocol.py), so a flash kernel that fits at the traced size fits at every size it is
checked at; the chain runs at any head dim.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from coders.template.emit.common import SMEM_BYTES, pow2_at_least_16
from coders.template.ir import Kernel, Op, Output
from coders.template.lower.configs import ATTENTION_CONFIG, ATTENTION_CONFIG_16, ATTENTION_NARROW, HALF
from coders.template.trace import GNode, Graph, Ref


def flash_smem(config: dict, d: int, dv: int, itemsize: int) -> int:
    """Shared memory of the flash kernel at head dims (d, dv), as Triton counts it: `num_stages`
    buffers of a key block's k and v tiles, plus one [BLOCK_M, BLOCK_D] tile for q and one
    [BLOCK_M, BLOCK_DV] more, every head-dim block the power of two the launcher rounds it to. That is
    exactly Triton's count at 97_'s port on an H100 (fp32 at tf32x3, 64 x 64 tiles, 2 stages): 1572864
    bytes at D = 1024, 786432 at the verifier's D = 321; which buffer the last tile is (the
    accumulator's way to its store?) was not looked into. (The steps' estimate, steps/kernels.py
    smem_bytes, counts the traced dims unrounded and no such tile.)"""
    bd, bdv = pow2_at_least_16(d), pow2_at_least_16(dv)
    stages = max(1, int(config["num_stages"]))
    return (stages * config["BLOCK_N"] + config["BLOCK_M"]) * (bd + bdv) * itemsize


def port_config(dtype: torch.dtype, d: int, dv: int) -> dict | None:
    """The flash kernel's port config at head dims (d, dv): the default where it fits, else narrow
    tiles where those fit, else None (the node lowers as its chain)."""
    base = ATTENTION_CONFIG_16 if dtype in HALF else ATTENTION_CONFIG
    for config in (base, {**base, **ATTENTION_NARROW}):
        if flash_smem(config, d, dv, dtype.itemsize) <= SMEM_BYTES:
            return dict(config)
    return None


def lower_attention(graph: Graph, node: GNode) -> Kernel:
    q, k, v = (a.name for a in node.args)
    body = [Op("attn", "acc")]
    output = Output(node.name, "attn", list(range(len(node.shape))), f"like:{q}")
    space = {"q": q, "k": k, "v": v, "k_transposed": False, "causal": node.attrs["causal"],
             "scale": node.attrs["scale"], "traced": list(node.shape)}
    return Kernel(name=node.name, kind="attention", space=space, operands=[], body=body,
                  outputs=[output], config=_config(graph, node))


def _config(graph: Graph, node: GNode) -> dict | None:
    q, v = graph.node(node.args[0].name), graph.node(node.args[2].name)
    return port_config(q.dtype, q.shape[-1], v.shape[-1])


def split_wide(graph: Graph) -> Graph:
    """The graph with each attention node that no flash config fits replaced by its chain."""
    taken = {n.name for n in graph.nodes}
    nodes: list[GNode] = []
    for node in graph.nodes:
        wide = node.kind == "attention" and _config(graph, node) is None
        nodes += _chain(graph, node, taken) if wide else [node]
    return replace(graph, nodes=nodes) if len(nodes) != len(graph.nodes) else graph


def _chain(graph: Graph, node: GNode, taken: set[str]) -> list[GNode]:
    """softmax(q @ k^T * scale [causal: -inf above the diagonal]) @ v as graph nodes; the last keeps
    the attention node's name, so its users read it unchanged."""
    q, k, v = node.args
    shape_q, shape_k = graph.node(q.name).shape, graph.node(k.name).shape
    scores = (*shape_q[:-1], shape_k[-2])
    dtype = node.dtype
    chain: list[GNode] = []

    def add(base: str, kind: str, op: str = "", args: list | None = None, **kw) -> GNode:
        name, i = f"{node.name}_{base}", 1
        while name in taken:
            i += 1
            name = f"{node.name}_{base}_{i}"
        taken.add(name)
        chain.append(GNode(name, kind, op, list(args or []), **kw))
        return chain[-1]

    def tensor(base: str, kind: str, op: str, args: list, attrs: dict | None = None) -> Ref:
        return Ref(add(base, kind, op, args, attrs=dict(attrs or {}), shape=scores, dtype=dtype).name)

    scale = _scale(node, q, add)
    kt = add("kt", "py", args=[k], shape=(*shape_k[:-2], shape_k[-1], shape_k[-2]), dtype=dtype,
             expr=f"{k.name}.transpose(-2, -1)")
    s = tensor("scores", "matmul", "bmm", [q, Ref(kt.name), None], {"form": "bmm"})
    s = tensor("scaled", "pw", "mul", [s, scale])
    if node.attrs["causal"]:
        s = tensor("masked", "pw", "where", [_causal_mask(q, k, shape_q, shape_k, add), float("-inf"), s])
    p = tensor("probs", "red", "softmax", [s], {"red": [len(scores) - 1, len(scores)]})
    chain.append(GNode(node.name, "matmul", "bmm", [p, v, None], {"form": "bmm"}, shape=node.shape,
                       dtype=dtype))
    return chain


def _scale(node: GNode, q: Ref, add) -> float | Ref:
    """The scores' factor: SDPA's `scale`, else 1/sqrt of q's head dim read at run time (the program
    runs at other sizes than the traced one)."""
    if node.attrs["scale"] is not None:
        return float(node.attrs["scale"])
    return Ref(add("scale", "py", args=[q], expr=f"1.0 / math.sqrt({q.name}.shape[-1])").name)


def _causal_mask(q: Ref, k: Ref, shape_q: tuple, shape_k: tuple, add) -> Ref:
    """True above the diagonal (a query's future keys), top-left aligned as SDPA's is_causal: a
    constant the wrapper makes, as the normaliser makes torch.triu(torch.ones(...), 1) (its
    `_triangle` kernel; torch.triu would be PyTorch compute)."""
    expr = (f"_triangle(torch.ones({q.name}.shape[-2], {k.name}.shape[-2], dtype=torch.bool, "
            f"device={q.name}.device), 1, upper=True)")
    mask = add("causal", "py", args=[q, k], attrs={"constant": True, "causal_mask": True},
               shape=(shape_q[-2], shape_k[-2]), dtype=torch.bool, expr=expr)
    return Ref(mask.name)
