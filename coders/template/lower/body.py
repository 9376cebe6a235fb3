"""`Body`: the operands and SSA ops of one kernel as a lowering builds them, and the dtype and
broadcasting rules every kernel kind shares."""

from __future__ import annotations

from typing import Any

import torch

from coders.template.ir import Op, Operand, ProgramIR
from coders.template.trace import GNode, Graph, Ref, unsupported


def dtype_name(dtype: torch.dtype | None) -> str | None:
    return str(dtype).removeprefix("torch.") if dtype is not None else None


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


def output_dtype(graph: Graph, node: GNode, operands: list[Operand]) -> str:
    """`like:<operand>` when the result's dtype follows an input, else the traced dtype."""
    for o in operands:
        src = graph.node(o.value)
        if src.is_tensor and src.dtype == node.dtype:
            return f"like:{o.value}"
    return dtype_name(node.dtype)
