"""The traced graph: canonical nodes (`GNode`), references between them (`Ref`), and the refusal
every tracing step raises for what the template coder does not support."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from mtmc.protocols import CoderError


def unsupported(what: str) -> CoderError:
    return CoderError(f"not supported by the template coder: {what}")


@dataclass(frozen=True)
class Ref:
    name: str


@dataclass
class GNode:
    name: str
    kind: str  # input | param | py | pw | red | matmul | conv | conv_transpose | attention | pool |
    #            pool_indices | recurrent | recurrent_state
    op: str = ""
    args: list[Any] = field(default_factory=list)
    attrs: dict[str, Any] = field(default_factory=dict)
    shape: tuple[int, ...] | None = None  # tensors only
    dtype: torch.dtype | None = None
    expr: str = ""  # py nodes
    alias_of: str | None = None
    library: bool = False

    @property
    def is_tensor(self) -> bool:
        return self.shape is not None

    def refs(self) -> list[str]:
        return [a.name for a in flat([self.args, self.attrs.get("refs", [])]) if isinstance(a, Ref)]


@dataclass
class Graph:
    task: str
    inputs: list[str]
    nodes: list[GNode]
    result: Any  # Ref, or a tuple/list of Refs (the forward's return structure)
    # (input, dim) whose traced size the graph assumes, dim None for all (trace/concrete.py)
    pins: list[tuple[str, int | None]] = field(default_factory=list)

    def node(self, name: str) -> GNode:
        return self._index()[name]

    def _index(self) -> dict[str, GNode]:
        return {n.name: n for n in self.nodes}

    def users(self, name: str) -> list[GNode]:
        return [n for n in self.nodes if name in n.refs()]


def flat(items: Any) -> list[Any]:
    if isinstance(items, list | tuple):
        return [x for item in items for x in flat(item)]
    if isinstance(items, slice):
        return flat([items.start, items.stop, items.step])
    return [items]


class Uncomputable:
    """A value the trace produced but the coder cannot compute (raises when used)."""

    def __init__(self, what: str) -> None:
        self.what = what


def same_nonunit(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    return [d for d in a if d != 1] == [d for d in b if d != 1]
