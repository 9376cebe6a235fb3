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
    """A proxy that answers `bool`, `int` and `operator.index` with the traced value (see above)."""

    def __bool__(self) -> bool:
        frame = inspect.currentframe()
        return self.tracer.answer(self, bool, asserted=frame is not None and asserted(frame.f_back))

    def __index__(self) -> int:
        return self.tracer.answer(self, operator.index)

    def __int__(self) -> int:
        return self.tracer.answer(self, int)

    def __getattr__(self, k: str) -> ConcreteAttribute:
        return ConcreteAttribute(self, k)


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
