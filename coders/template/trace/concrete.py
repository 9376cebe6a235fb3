"""Python numbers the fx trace needs from traced values, answered at the task's own sizes.

torch.fx keeps sizes symbolic, so Python control flow on them fails: `for t in range(x.size(0))`,
`int(x.shape[0] / n)`, `assert L == H * W`. The tracer (fx_tracer.py) answers such a question with
the value at the sizes being traced, read from a shadow run of the graph traced so far over the meta
inputs (shapes and dtypes, no data). An answer the program's work depends on becomes a pin: the input
dims it was read from, which the program checks on entry (emit/module.py), so that at other sizes it
refuses instead of computing another function. An assertion's test needs no pin (where it fails,
the reference raises), nor does a rank (no size changes it). A question about data (a tensor's
contents) has no answer on meta tensors and fails as in fx.
"""

from __future__ import annotations

import dis
import inspect
import operator
from types import FrameType
from typing import Any

import torch
import torch.fx as fx
from torch.fx.proxy import Attribute

from coders.template.trace.graph import flat

# fx nodes that read a traced tensor's sizes, and those that read its rank only (which no size changes)
_SIZE_METHODS = ("size", "numel")
_RANK = ("dim", "ndim", "ndimension")


class Shadow(fx.Interpreter):
    """The graph being traced, run node by node over the meta inputs as far as a question needs."""

    def __init__(self, root: torch.nn.Module, graph: fx.Graph, inputs: list[Any]) -> None:
        super().__init__(root, garbage_collect_values=False, graph=graph)
        self.args_iter = iter(inputs)

    def value(self, node: fx.Node) -> Any:
        for n in self.graph.nodes:
            if n not in self.env:
                self.env[n] = self.run_node(n)
            if n is node:
                break
        return self.env[node]


class ConcreteProxy(fx.Proxy):
    """A proxy that answers `bool`, `int` and `operator.index` with the traced value (see above).

    torch's argument parser also asks `operator.index` of a proxy passed where it takes an int
    (`F.avg_pool2d(x, x.size(2))`), then hands the call to `__torch_function__` with the proxy
    itself, so the graph keeps the size symbolic: answers asked at the call site of that call, about
    its arguments, are withdrawn there (the tracer's `withdraw`), pinning nothing."""

    def __bool__(self) -> bool:
        frame = caller()
        return self.tracer.answer(self, bool, site(frame), asserted=asserted(frame))

    def __index__(self) -> int:
        return self.tracer.answer(self, operator.index, site(caller()))

    def __int__(self) -> int:
        return self.tracer.answer(self, int, site(caller()))

    def __getattr__(self, k: str) -> ConcreteAttribute:
        return ConcreteAttribute(self, k)

    @classmethod
    def __torch_function__(cls, orig_method: Any, types: Any, args: tuple = (),
                           kwargs: dict | None = None) -> Any:
        proxies = [a for a in flat([list(args), list((kwargs or {}).values())]) if isinstance(a, fx.Proxy)]
        if proxies:
            proxies[0].tracer.withdraw(site(caller()), {p.node for p in proxies})
        return super().__torch_function__(orig_method, types, args, kwargs)


def caller() -> FrameType | None:
    """The frame that called the caller of this function (a dunder's: the code asking)."""
    frame = inspect.currentframe()
    return frame.f_back.f_back if frame is not None and frame.f_back is not None else None


def site(frame: FrameType | None) -> tuple[int, int] | None:
    """Where in the traced code a question was asked: its frame and instruction."""
    return (id(frame), frame.f_lasti) if frame is not None else None


class ConcreteAttribute(Attribute, ConcreteProxy):
    """`x.shape`, `x.ndim`: fx's lazy attribute proxy, answering like ConcreteProxy."""


def asserted(frame: FrameType | None) -> bool:
    """The truth value being taken in `frame` is an `assert` statement's test: one side of the
    conditional jump that takes it raises AssertionError next."""
    if frame is None:
        return False
    insts = list(dis.get_instructions(frame.f_code))
    here = next((i for i, inst in enumerate(insts) if inst.offset == frame.f_lasti), None)
    if here is None or "IF" not in insts[here].opname or here + 1 >= len(insts):
        return False
    target = insts[here].argval
    sides = [insts[here + 1]] + [inst for inst in insts if inst.offset == target]
    return any(inst.opname == "LOAD_ASSERTION_ERROR" for inst in sides)


def is_data(value: Any) -> bool:
    """A value that holds a tensor's contents, which meta tensors do not have."""
    return isinstance(value, torch.Tensor)


def pins_of(node: fx.Node, placeholders: list[fx.Node]) -> set[tuple[str, int | None]]:
    """The (input, dim) pairs a traced Python value was read from; dim None: every dim. A size of a
    value computed inside the forward depends on the inputs' sizes in ways the graph does not say:
    it pins every dim of every input."""
    pins: set[tuple[str, int | None]] = set()
    seen: set[fx.Node] = set()
    todo = [node]
    while todo:
        n = todo.pop()
        if n in seen:
            continue
        seen.add(n)
        read = _size_read(n)
        if read is None:
            todo.extend(n.all_input_nodes)
            continue
        source, dim = read
        if source is None:  # a rank
            continue
        if source.op == "placeholder":
            pins.add((source.target, dim))
        elif source.op != "get_attr":  # a parameter's sizes are the constructor's: fixed
            pins.update((p.target, None) for p in placeholders)
    return pins


def _size_read(n: fx.Node) -> tuple[fx.Node | None, int | None] | None:
    """(tensor, dim) when `n` reads sizes of a traced tensor, dim None for all of them; (None, None)
    for its rank; None when it reads neither (then its inputs are looked at)."""
    if n.op == "call_function" and n.target is operator.getitem and _shape_of(n.args[0]) is not None \
            and isinstance(n.args[1], int):
        return _shape_of(n.args[0]), n.args[1]
    if n.op == "call_method" and n.target == "size" and len(n.args) == 2 and isinstance(n.args[1], int):
        return n.args[0], n.args[1]
    if _shape_of(n) is not None:
        return _shape_of(n), None
    if (n.op == "call_method" and n.target in _RANK) or \
            (n.op == "call_function" and n.target is getattr and n.args[1] in _RANK):
        return None, None
    return None


def _shape_of(n: Any) -> fx.Node | None:
    """The tensor whose whole shape `n` is (`x.shape`, `x.size()`, `x.numel()`), else None."""
    if not isinstance(n, fx.Node):
        return None
    if n.op == "call_function" and n.target is getattr and n.args[1] == "shape":
        return n.args[0]
    if n.op == "call_method" and n.target in _SIZE_METHODS and len(n.args) == 1:
        return n.args[0]
    return None
