"""The narrow interface between the normaliser and its handlers.

A handler turns one traced call into graph nodes. It sees the call's canonical op, its bound
arguments (graph values as `Ref`s, Python numbers, shapes) and the traced result (a meta tensor, for
shapes and dtypes), and builds nodes only through the `Builder` methods below; it returns the `Ref`
(or tuple of them) the call's users read. Function handlers are registered by canonical op in
trace/registry.py, module handlers by module type in trace/modules.py.
"""

from __future__ import annotations

from typing import Any, Protocol

import torch
import torch.fx as fx
import torch.nn as nn

from coders.template.trace.graph import GNode, Ref


class Builder(Protocol):
    """What a handler may do to the graph being built (trace/normalizer.py's Normalizer)."""

    def add(self, base: str, kind: str, op: str = "", args: list | None = None,
            attrs: dict | None = None, like: Any = None, **kw: Any) -> Ref: ...

    def pw(self, op: str, args: list, base: str | None = None, attrs: dict | None = None,
           dtype: torch.dtype | None = None) -> Ref: ...

    def red(self, op: str, x: Ref, red: tuple[int, int], base: str, out_shape: tuple[int, ...],
            extra: list | None = None, attrs: dict | None = None, dtype: torch.dtype | None = None,
            refs: list[Ref] | None = None) -> Ref: ...

    def py(self, base: str, expr: str, result: Any, alias_of: str | None = None,
           library: bool = False, args: list | None = None) -> Ref: ...

    def param(self, path: str) -> Ref: ...

    def meta(self, ref: Any) -> GNode | None: ...

    def is_tensor(self, ref: Any) -> bool: ...

    def shape(self, ref: Ref) -> tuple[int, ...]: ...


class FunctionHandler(Protocol):
    """A function or method call: `name` is the node's base name, `b` the bound arguments by
    parameter name (trace/signatures.py)."""

    def __call__(self, nz: Builder, name: str, op: str, b: dict[str, Any], result: Any) -> Any: ...


class ModuleHandler(Protocol):
    """A call of a submodule: `n` is its fx node, `path` the module's attribute path (its parameters
    are `nz.param(f"{path}.weight")`)."""

    def __call__(self, nz: Builder, n: fx.Node, module: nn.Module, path: str, args: list, kwargs: dict,
                 result: Any) -> Any: ...
