"""The fx tracer of the template coder: torch.fx's, with the answers it cannot give by itself.

- Buffers are proxied like parameters (`proxy_buffer_attributes`): a causal mask registered in
  the constructor and sliced by the traced sequence length (`self.bias[:, :, :T, :T]`, minGPT) is
  a graph value, where fx would index the real tensor with a Proxy and fail.
- A device comparison (`if x.device != self.clusters.device: raise ...`, NetVLAD) is answered:
  the verifier runs a model and its inputs on one device, so two tensors' devices are equal.
- Python control flow on sizes (`range(x.size(0))`, `int(n / k)`, `assert L == H * W`) is answered
  with the traced sizes' values, pinned where the program depends on them (trace/concrete.py). A
  question about data still fails as in fx.
- A forward parameter with a default that the task's inputs leave out (`h0=None`) takes its default
  (`concrete_args`): the trace follows the branch the reference takes on those inputs.
"""

from __future__ import annotations

import inspect
import operator
from typing import Any

import torch
import torch.fx as fx
import torch.nn as nn
from torch.fx._symbolic_trace import _assert_is_none
from torch.fx.proxy import TraceError

from coders.template.trace.concrete import ConcreteProxy, Shadow, is_data, pins_of


class TemplateTracer(fx.Tracer):
    proxy_buffer_attributes = True

    def __init__(self, inputs: list[Any]) -> None:
        super().__init__()
        self.inputs = inputs
        self.answered: list[tuple[fx.Node, Any]] = []  # nodes whose traced value the program uses
        self._shadow: Shadow | None = None
        self._shadowing = False  # fx's patches (module calls, parameter reads) stand aside

    def proxy(self, node: fx.Node) -> fx.Proxy:
        return ConcreteProxy(node, self)

    def call_module(self, m: nn.Module, forward: Any, args: tuple, kwargs: dict) -> Any:
        if self._shadowing:  # the shadow runs a leaf module on meta tensors, not into the graph
            return forward(*args, **kwargs)
        return super().call_module(m, forward, args, kwargs)

    def getattr(self, attr: str, attr_val: Any, parameter_proxy_cache: dict[str, Any]) -> Any:
        if self._shadowing:
            return attr_val
        return super().getattr(attr, attr_val, parameter_proxy_cache)

    def answer(self, proxy: fx.Proxy, convert: Any, site: Any = None, asserted: bool = False) -> Any:
        """`convert` (bool, int, operator.index) of the traced value of `proxy` (see the docstring),
        asked at `site` (trace/concrete.py)."""
        node = proxy.node
        if convert is bool and _is_device_comparison(node):
            return node.target is operator.eq
        if self._shadow is None:
            self._shadow = Shadow(self.root, self.graph, self.inputs)
        self._shadowing = True
        try:
            value = self._shadow.value(node)
        finally:
            self._shadowing = False
        if is_data(value):
            raise TraceError("symbolically traced variables cannot be used as inputs to control flow "
                             f"(a {convert.__name__} of data: {node.format_node()})")
        answer = convert(value)  # may raise (index of a float): then nothing was answered
        if not asserted:
            self.answered.append((node, site))
        return answer

    def withdraw(self, site: Any, nodes: set[fx.Node]) -> None:
        """Answers about `nodes` asked at `site` that torch's argument parser threw away."""
        self.answered = [(n, s) for n, s in self.answered if not (s == site and n in nodes)]


def _is_device_comparison(node: fx.Node) -> bool:
    return node.op == "call_function" and node.target in (operator.eq, operator.ne) and \
        len(node.args) == 2 and all(_is_device(a) for a in node.args)


def _is_device(arg: object) -> bool:
    """`t.device` of a traced tensor: fx records the attribute read as a getattr call."""
    return isinstance(arg, fx.Node) and arg.op == "call_function" and arg.target is getattr and \
        len(arg.args) == 2 and arg.args[1] == "device"


def symbolic_trace(model: nn.Module, inputs: list[Any]) -> fx.GraphModule:
    """The fx graph of `model`'s forward on `inputs` (meta tensors). `gm.meta["pins"]`: the set of
    (input, dim) whose traced sizes the graph assumes, dim None for all of an input's;
    `gm.meta["rebound"]`: the tensor attributes the forward rebinds (`self.hidden = ...`)."""
    tracer = TemplateTracer(inputs)
    left_out = _left_out_defaults(model, len(inputs))
    state = _attributes(model)
    try:
        graph = tracer.trace(model, concrete_args=left_out or None)
    finally:
        rebound = _restore(model, state)
    _drop_left_out(graph, left_out)
    gm = fx.GraphModule(tracer.root, graph, type(model).__name__)
    gm.meta["rebound"] = rebound
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    gm.meta["pins"] = set().union(*[pins_of(n, placeholders) for n, _ in tracer.answered])
    return gm


def _left_out_defaults(model: nn.Module, given: int) -> dict[str, Any]:
    """The forward's parameters after the `given` inputs that have defaults, with them."""
    params = list(inspect.signature(model.forward).parameters.values())[given:]
    plain = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    if any(p.kind in plain and p.default is inspect.Parameter.empty for p in params):
        return {}  # the task leaves out a required argument: fx traces it, the replay says so
    return {p.name: p.default for p in params if p.kind in plain}


def _drop_left_out(graph: fx.Graph, left_out: dict[str, Any]) -> None:
    """fx keeps a placeholder for each concrete argument, checked by `_assert_is_none`: the
    program's forward takes only the given inputs, so both go."""
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target is _assert_is_none:
            graph.erase_node(node)
    for node in list(graph.nodes):
        if node.op == "placeholder" and not node.users and \
                (node.target in left_out or _strip(node.target) in left_out):
            graph.erase_node(node)


def _strip(target: str) -> str:
    """fx renames a concrete argument's placeholder `h0` to `h0_1`."""
    base, _, suffix = target.rpartition("_")
    return base if suffix.isdigit() else target


def _attributes(model: nn.Module) -> dict[str, tuple[nn.Module, str, Any]]:
    """Every plain attribute of the model and its submodules (not a parameter or buffer): the
    forward may rebind one (`self.hidden = ...`), which the trace must not leave behind."""
    return {f"{prefix}.{name}".lstrip("."): (module, name, value)
            for prefix, module in model.named_modules() for name, value in vars(module).items()
            if not name.startswith("_")}


def _restore(model: nn.Module, state: dict[str, tuple[nn.Module, str, Any]]) -> set[str]:
    """Put back what the traced forward rebound (it left proxies there) and drop what it added that
    fx did not (`_tensor_constant0` stays); the paths of the tensors it rebound: state the forward
    carries from one call to the next (trace/normalizer.py)."""
    rebound = set()
    for path, (module, name, value) in state.items():
        if vars(module).get(name) is not value:
            setattr(module, name, value)
            rebound.add(path)
    for prefix, module in model.named_modules():
        for name, value in list(vars(module).items()):
            if isinstance(value, fx.Proxy) and f"{prefix}.{name}".lstrip(".") not in state:
                delattr(module, name)
    return {path for path in rebound if isinstance(state[path][2], torch.Tensor)}
