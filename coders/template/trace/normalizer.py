"""The normaliser: walks the fx graph, keeps views and shape arithmetic as Python (py nodes) and hands
every other call to its handler (trace/registry.py), through the builder methods handlers may use
(the `Builder` protocol, trace/interface.py)."""

from __future__ import annotations

import operator
from typing import Any

import torch
import torch.fx as fx
import torch.nn as nn

from coders.template.trace.graph import GNode, Graph, Ref, Uncomputable, flat, same_nonunit, unsupported
from coders.template.trace.modules import MODULE_HANDLERS
from coders.template.trace.registry import HANDLERS, handler_key
from coders.template.trace.render import render, render_call
from coders.template.trace.signatures import (
    GENERATED,
    PURE_VIEWS,
    PY_ARITH,
    RESERVED,
    SIGNATURES,
    VIEWS,
    bind,
)
from mtmc.tasks import Task


class Normalizer:
    def __init__(self, task: Task, gm: fx.GraphModule, results: dict[str, Any],
                 made_by_trace: set[str], rebound: set[str] = frozenset()) -> None:
        self.task = task.name
        self.made_by_trace = made_by_trace  # attributes fx added to the model: tensor constants
        # attributes the forward rebinds or overwrites: state it carries from one call to the next
        self.stateful = set(rebound) | _copied_into(gm)
        self.written: dict[str, Ref] = {}  # attribute path -> the value the forward copied into it
        self.library = tuple(task.library_ops)
        self.gm = gm
        self.results = results
        self.nodes: list[GNode] = []
        self.names: set[str] = set()
        self.env: dict[str, Any] = {}  # fx node name -> Ref / tuple of Refs / constant

    # --- building blocks --------------------------------------------------------------------------
    def fresh(self, base: str) -> str:
        base = base if base.isidentifier() and not base.startswith("_") else f"v_{base.strip('_')}"
        name, i = base, 1
        while name in self.names or name in RESERVED or GENERATED.search(name):
            i += 1
            name = f"{base}_{i}"
        self.names.add(name)
        return name

    def add(self, base: str, kind: str, op: str = "", args: list | None = None,
            attrs: dict | None = None, like: Any = None, **kw: Any) -> Ref:
        node = GNode(self.fresh(base), kind, op, list(args or []), dict(attrs or {}), **kw)
        if like is not None and node.shape is None:
            node.shape, node.dtype = _meta_of(like)
        self.nodes.append(node)
        return Ref(node.name)

    def meta(self, ref: Any) -> GNode | None:
        if isinstance(ref, Ref):
            return next(n for n in reversed(self.nodes) if n.name == ref.name)
        return None

    def is_tensor(self, ref: Any) -> bool:
        node = self.meta(ref)
        return node is not None and node.is_tensor

    def shape(self, ref: Ref) -> tuple[int, ...]:
        node = self.meta(ref)
        if node is None or node.shape is None:
            raise unsupported(f"expected a tensor, got {ref!r}")
        return node.shape

    def pw(self, op: str, args: list, base: str | None = None, attrs: dict | None = None,
           dtype: torch.dtype | None = None) -> Ref:
        """A synthesized elementwise node; shape = broadcast of its tensor args."""
        tensors = [a for a in args if self.is_tensor(a)]
        shape = tuple(torch.broadcast_shapes(*[self.shape(t) for t in tensors])) if tensors else ()
        if dtype is None:
            floats = [self.meta(t).dtype for t in tensors if self.meta(t).dtype.is_floating_point]
            dtype = floats[0] if floats else torch.float32
        return self.add(base or op, "pw", op, args, attrs, shape=shape, dtype=dtype)

    def red(self, op: str, x: Ref, red: tuple[int, int], base: str, out_shape: tuple[int, ...],
            extra: list | None = None, attrs: dict | None = None, dtype: torch.dtype | None = None,
            refs: list[Ref] | None = None) -> Ref:
        """A reduction-family node; `refs` are extra values it reads (kept live, not operands)."""
        attrs = {"red": list(red), **(attrs or {})}
        if refs:
            attrs["refs"] = refs
        return self.add(base, "red", op, [x, *(extra or [])], attrs,
                        shape=tuple(out_shape), dtype=dtype or self.meta(x).dtype)

    def py(self, base: str, expr: str, result: Any, alias_of: str | None = None,
           library: bool = False, args: list | None = None) -> Ref:
        shape, dtype = _meta_of(result)
        return self.add(base, "py", "", list(args or []), {}, shape=shape, dtype=dtype, expr=expr,
                        alias_of=alias_of, library=library)

    def library_ops(self) -> tuple[str, ...]:
        return self.library

    # --- the walk ---------------------------------------------------------------------------------
    def run(self) -> Graph:
        inputs: list[str] = []
        result: Any = None
        for n in self.gm.graph.nodes:
            if n.op == "placeholder":
                name = self.fresh(n.name)
                shape, dtype = _meta_of(self.results[n.name])
                self.nodes.append(GNode(name, "input", shape=shape, dtype=dtype))
                inputs.append(name)
                self.env[n.name] = Ref(name)
            elif n.op == "get_attr":
                self.env[n.name] = self.attribute(n.target)
            elif n.op == "output":
                result = self.map_args(n.args[0])
            else:
                args = self.map_args(list(n.args))
                kwargs = self.map_args(dict(n.kwargs))
                self.env[n.name] = self.call(n, args, kwargs)
        return Graph(self.task, inputs, self.nodes, result, self.pins())

    def pins(self) -> list[tuple[str, int | None]]:
        """The traced sizes the graph assumes (trace/concrete.py), by the program's input names."""
        names = {n.target: self.env[n.name].name for n in self.gm.graph.nodes if n.op == "placeholder"}
        pins = self.gm.meta.get("pins", set())
        whole = {target for target, dim in pins if dim is None}  # a whole shape covers its dims
        return sorted(((names[target], dim) for target, dim in pins if dim is None or target not in whole),
                      key=lambda pin: (pin[0], -1 if pin[1] is None else pin[1]))

    def attribute(self, path: str) -> Any:
        """A module attribute the forward reads. One it overwrites is read as the forward left it;
        read before that, it is state from the previous call, which a program cannot keep."""
        if path in self.written:
            return self.written[path]
        if path in self.stateful:
            return Uncomputable(f"self.{path} as the forward finds it: the forward overwrites it, so "
                                "its value carries over from the previous call")
        return self.param(path)

    def copy_into(self, n: fx.Node, args: list, result: Any) -> Ref:
        """`self.attr.copy_(src)` that overwrites a whole attribute with a value of its shape and
        dtype: later reads of it in this call read `src` (the state it also leaves is not output)."""
        dst = n.args[0]
        src = args[1] if len(args) > 1 else None
        if not (isinstance(dst, fx.Node) and dst.op == "get_attr"):
            raise unsupported("copy_ into a value other than a module attribute (in-place writes)")
        if not self.is_tensor(src) or self.shape(src) != tuple(result.shape) or \
                self.meta(src).dtype != result.dtype:
            raise unsupported(f"copy_ into self.{dst.target} of a value of another shape or dtype")
        self.written[dst.target] = src
        self.env[dst.name] = src
        return src

    def param(self, path: str) -> Ref:
        name = "p_" + path.replace(".", "_")
        existing = [n for n in self.nodes if n.kind == "param" and n.attrs["path"] == path]
        if existing:
            return Ref(existing[0].name)
        value = self.gm.get_parameter(path) if _has_param(self.gm, path) else _get_attr(self.gm, path)
        if not isinstance(value, torch.Tensor):
            raise unsupported(f"non-tensor attribute self.{path}")
        if path in self.made_by_trace:  # ModelNew has no such attribute: the value is taken
            return self.scalar_constant(path, value, value, "a tensor constant built in forward")
        return self.add(name, "param", attrs={"path": path}, like=value)

    def scalar_constant(self, base: str, value: Any, result: Any, what: str) -> Ref:
        """A 0-d tensor whose value is a Python number known at trace time (`torch.tensor(0.0,
        device=x.device)`, `torch.tensor(self.value)`). It stays a tensor in the graph, so `torch.min(x,
        t)` is still elementwise, and kernels take it as a literal (lower/body.py, Body.load): the program
        builds no tensor for it."""
        if isinstance(value, torch.Tensor) and value.dim() == 0 and not value.is_meta:
            value = value.item()
        if not isinstance(value, bool | int | float) or not isinstance(result, torch.Tensor) or \
                result.dim() != 0 or result.dtype.is_complex:
            raise unsupported(f"{what} other than a Python number known at trace time")
        if result.dtype.is_floating_point:
            value = float(value)
        else:
            value = bool(value) if result.dtype == torch.bool else int(value)
        return self.add(base, "py", attrs={"scalar": value}, like=result,
                        expr=f"torch.tensor({render(value)}, dtype={result.dtype})")

    def map_args(self, args: Any) -> Any:
        if isinstance(args, fx.Node):
            return self.env[args.name]
        if isinstance(args, list | tuple):
            mapped = [self.map_args(a) for a in args]
            return mapped if isinstance(args, list) else tuple(mapped)
        if isinstance(args, dict):
            return {k: self.map_args(v) for k, v in args.items()}
        if isinstance(args, slice):
            return slice(self.map_args(args.start), self.map_args(args.stop), self.map_args(args.step))
        return args

    def call(self, n: fx.Node, args: list, kwargs: dict) -> Any:
        result = self.results.get(n.name)
        if n.op == "call_method" and n.target == "copy_":  # its destination may be state (above)
            return self.copy_into(n, args, result)
        bad = [a for a in flat([args, list(kwargs.values())]) if isinstance(a, Uncomputable)]
        if n.target in (operator.getitem, getattr) and isinstance(args[0], tuple | list):
            index = {"values": 0, "indices": 1}.get(args[1], args[1])
            # an Uncomputable stays a value until something reads it (`out, _ = mha(x, x, x)`
            # unpacks the attention weights too); a node reading it, or the result, raises
            return args[0][index]
        if bad:
            raise unsupported(bad[0].what)
        if n.op == "call_module":
            module = self.gm.get_submodule(n.target)
            handler = MODULE_HANDLERS.get(type(module))
            if handler is None:
                raise unsupported(f"module {type(module).__name__}")
            return handler(self, n, module, str(n.target), args, kwargs, result)
        key: Any = n.target if n.op == "call_function" else f".{n.target}"
        spec = SIGNATURES.get(key)
        if spec is None:
            # Python arithmetic and comparisons on shapes/numbers stay Python
            if not _has_tensor(self, args, kwargs) and not isinstance(result, torch.Tensor):
                return self.py_call(n, args, kwargs, result)
            name = n.target if isinstance(n.target, str) else getattr(n.target, "__name__", n.target)
            raise unsupported(f"op {name}")
        canonical, params = spec
        if canonical in ("factory", "triu", "tril"):
            return self.constant_tensor(n, canonical, args, kwargs, result)
        if canonical == "tensor":
            data = args[0] if args else kwargs.get("data", kwargs.get("s"))
            return self.scalar_constant(n.name, data, result, f"{n.target.__name__}(...) in forward")
        bound = bind(canonical, params, args, kwargs)
        if canonical == "alias" and n.target == "contiguous" and self.strided(n.args[0]):
            # a real copy (ShuffleNet's view / transpose / contiguous / view channel shuffle): the
            # view after it needs the new layout; a copy is glue, not compute
            return self.py(n.name, f"{render(args[0])}.contiguous()", result, args=[args[0]])
        if canonical in VIEWS or (canonical in PY_ARITH and not _has_tensor(self, args, kwargs)):
            ref = self.py_call(n, args, kwargs, result, canonical)
            if canonical == "narrow":  # an exclusive scan's slice (coders/template/scans.py)
                self.meta(ref).attrs.update(_narrow_attrs(args, kwargs))
            return ref
        return HANDLERS[handler_key(canonical)](self, n.name, canonical, bound, result)

    def strided(self, arg: Any) -> bool:
        """The traced value of an fx argument is a tensor whose layout is not contiguous."""
        value = self.results.get(arg.name) if isinstance(arg, fx.Node) else None
        return isinstance(value, torch.Tensor) and not value.is_contiguous()

    def constant_tensor(self, n: fx.Node, canonical: str, args: list, kwargs: dict, result: Any) -> Ref:
        """A tensor built from sizes only (a mask): made by torch in the wrapper, it reads no data."""
        if canonical in ("triu", "tril"):
            src = self.meta(args[0])
            if src is None or not src.attrs.get("constant"):
                return self.triangle_of_data(n.name, canonical, args, kwargs, result)
            # computed by a small Triton kernel: torch.triu in forward would be PyTorch compute
            diagonal = (args[1:] or [kwargs.get("diagonal", 0)])[0]
            expr = f"_triangle({render(args[0])}, {render(diagonal)}, upper={canonical == 'triu'})"
        else:
            expr = render_call(n, args, kwargs)
        ref = self.py(n.name, expr, result, args=list(args) + list(kwargs.values()))
        node = self.meta(ref)
        node.attrs["constant"] = True
        if canonical == "triu" and self.meta(args[0]).attrs.get("ones") and \
                (args[1:] or [kwargs.get("diagonal", 0)])[0] == 1 and result.dtype == torch.bool and \
                result.dim() == 2 and result.shape[0] == result.shape[1]:
            node.attrs["causal_mask"] = True  # True above the diagonal: the future in attention
        if n.target is torch.ones or getattr(n.target, "__name__", "") == "ones":
            node.attrs["ones"] = True
        return ref

    def triangle_of_data(self, name: str, canonical: str, args: list, kwargs: dict, result: Any) -> Ref:
        """torch.triu / torch.tril of computed data (a matmul's result): an elementwise op that zeroes
        the elements off the triangle of the last two dims, so it fuses into a matmul's epilogue."""
        x = args[0]
        diagonal = (args[1:] or [kwargs.get("diagonal", 0)])[0]
        if not self.is_tensor(x) or len(self.shape(x)) < 2:
            raise unsupported(f"{canonical} of a tensor of fewer than 2 dims")
        if isinstance(diagonal, bool) or not isinstance(diagonal, int):
            raise unsupported(f"{canonical} with a computed diagonal")
        return self.add(name, "pw", canonical, [x], {"diagonal": diagonal}, like=result)

    def py_call(self, n: fx.Node, args: list, kwargs: dict, result: Any,
                canonical: str | None = None) -> Ref:
        """Emit the call itself as Python (views, shape arithmetic, tuple indexing)."""
        if isinstance(result, torch.Tensor) and canonical not in VIEWS:
            raise unsupported(f"op {n.target}")
        expr = render_call(n, args, kwargs)
        alias = None
        if isinstance(result, torch.Tensor) and args and isinstance(args[0], Ref):
            src = self.meta(args[0])
            if src.is_tensor and same_nonunit(src.shape, tuple(result.shape)) and \
                    canonical in ("view", "reshape", "unsqueeze", "squeeze", "flatten", "alias"):
                alias = src.name
        if isinstance(result, torch.Tensor) and canonical != "alias" and \
                canonical not in PURE_VIEWS:
            raise unsupported(f"op {n.target}")
        return self.py(n.name, expr, result, alias_of=alias, args=list(args) + list(kwargs.values()))


def _copied_into(gm: fx.GraphModule) -> set[str]:
    """The attributes the graph overwrites in place (`self.hidden.copy_(h0)`)."""
    return {n.args[0].target for n in gm.graph.nodes if n.op == "call_method" and n.target == "copy_"
            and isinstance(n.args[0], fx.Node) and n.args[0].op == "get_attr"}


def _has_param(gm: nn.Module, path: str) -> bool:
    try:
        gm.get_parameter(path)
        return True
    except AttributeError:
        return False


def _get_attr(gm: nn.Module, path: str) -> Any:
    obj: Any = gm
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def _meta_of(value: Any) -> tuple[tuple[int, ...] | None, torch.dtype | None]:
    if isinstance(value, torch.Tensor):
        return tuple(value.shape), value.dtype
    return None, None


def _narrow_attrs(args: list, kwargs: dict) -> dict[str, Any]:
    """`x.narrow(dim, start, length)` as {"narrow": {input, dim, start}} when those are known numbers."""
    bound = dict(zip(["input", "dim", "start", "length"], args, strict=False)) | dict(kwargs)
    x, dim, start = bound.get("input"), bound.get("dim"), bound.get("start")
    if isinstance(x, Ref) and isinstance(dim, int) and isinstance(start, int):
        return {"narrow": {"input": x.name, "dim": dim, "start": start}}
    return {}


def _has_tensor(nz: Normalizer, args: Any, kwargs: Any) -> bool:
    return any(nz.is_tensor(a) for a in flat([args, list(kwargs.values())]))
