"""`lower`: the canonical op graph as the IR's program, one kernel per op and Python steps for
everything else (parameters, views, shape arithmetic), dead code dropped."""

from __future__ import annotations

from typing import Any

from coders.template import pooling, recurrent, scans
from coders.template.conv_lower import lower_conv
from coders.template.conv_transpose_lower import lower_conv_transpose
from coders.template.ir import ProgramIR, PyStep, self_path
from coders.template.lower.attention import lower_attention, split_wide
from coders.template.lower.body import Body, dtype_name
from coders.template.lower.matmul import attention_patterns, lower_matmul
from coders.template.lower.pointwise import lower_cat, lower_pointwise
from coders.template.lower.reduce import lower_reduce
from coders.template.trace import GNode, Graph, Ref, Uncomputable, render, unsupported
from coders.template.trace.graph import flat


def lower(graph: Graph) -> ProgramIR:
    graph = split_wide(graph)  # attention too wide for the flash kernel's tiles: its chain of ops
    values: dict[str, dict[str, Any]] = {}
    for node in graph.nodes:
        values[node.name] = {"shape": list(node.shape) if node.is_tensor else None,
                             "dtype": dtype_name(node.dtype) if node.is_tensor else None}
    ir = ProgramIR(task=graph.task, args=list(graph.inputs), values=values, steps=[],
                   result=_render_result(graph.result), pins=_pins(graph))
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
            ir.steps.append(lower_pointwise(graph, ir, node))
        elif node.kind == "red":
            ir.steps.append(lower_reduce(graph, ir, node))
        elif node.kind == "matmul":
            ir.steps.append(lower_matmul(graph, ir, node))
        elif node.kind == "conv":
            ir.steps.append(lower_conv(graph, ir, node))
        elif node.kind == "attention":
            ir.steps.append(lower_attention(graph, node))
        elif node.kind == "conv_transpose":
            ir.steps.append(lower_conv_transpose(graph, ir, node, Body(graph, ir, len(node.shape))))
        elif node.kind == "pool":
            ir.steps.append(pooling.lower_pool(graph, node, used))
        elif node.kind == "cat":
            ir.steps.append(lower_cat(graph, node))
        elif node.kind == "recurrent":
            ir.steps.append(recurrent.lower_recurrent(graph, node, used))
        elif node.kind in ("pool_indices", "recurrent_state"):
            continue  # a second output of its pool's or recurrence's kernel
        elif node.kind in scans.WALK_KINDS:
            ir.steps.append(scans.lower_walk(graph, node))
        elif node.kind == "zeros":  # a zero tensor used as data (a cat's part): allocation, glue
            src = node.attrs["refs"][0].name
            ir.steps.append(PyStep(outs=[node.name], expr=f"torch.zeros_like({src}, dtype={node.dtype})",
                                   uses=[src]))
        elif node.kind == "flip":
            raise unsupported(f"{node.op} (other than around a cumsum: a reverse)")
        else:
            raise unsupported(f"node kind {node.kind}")
    ir.patterns = attention_patterns(graph)
    return ir


def _pins(graph: Graph) -> list[list[Any]]:
    """[input, dim, traced size] for each size the graph assumes (dim None: [input, None, shape])."""
    shapes = {name: graph.node(name).shape for name in graph.inputs}
    return [[name, dim, list(shapes[name]) if dim is None else shapes[name][dim]]
            for name, dim in graph.pins]


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
    for item in flat([result]):  # a returned value the coder cannot compute says why
        if isinstance(item, Uncomputable):
            raise unsupported(item.what)
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
