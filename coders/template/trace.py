"""Trace a task's reference into a small graph of canonical ops.

`torch.fx.symbolic_trace` keeps shapes symbolic (`x.size(0)` is a graph node), which is what the
generated program needs to run at any size; an fx interpreter over meta tensors at the task's sizes
adds each node's traced shape and dtype, used only for structural decisions. F.* calls, tensor
methods, torch.* functions and nn modules that mean the same op all map to one canonical node:

    input / param     forward arguments; parameters and buffers (by attribute path)
    py                shape arithmetic, views, tuple indexing, an allowed library call
                      or a 0-d constant `scalar=` (torch.tensor(0.5)), a literal in kernels
    pw                an elementwise op (canonical names in coders/template/ops.py)
    red               a reduction family op over contiguous dims `red=[d0, d1]` of its first arg
    matmul            linear / mm / bmm / matmul (+ bias)
    conv              conv1d / conv2d / conv3d (+ bias)
    conv_transpose    ConvTranspose1d/2d/3d (+ bias), geometry read at run time (conv_transpose_lower.py)
    pool              max / average pooling, fixed or adaptive windows (coders/template/pooling.py);
    pool_indices      its argmax positions (return_indices)
    attention         scaled dot-product attention (nn.MultiheadAttention and transformer encoder
                      layers trace to it with matmuls and norms: coders/template/transformer.py)
    recurrent         one LSTM / GRU / RNN layer over a sequence (coders/template/recurrent.py);
    recurrent_state   its h_n or c_n
"""

from __future__ import annotations

import contextlib
import importlib
import math
import operator
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx as fx
import torch.nn as nn
import torch.nn.functional as F

from coders.template import pooling
from coders.template.ir import self_path
from coders.template.ops import UNARY
from coders.template.tracer import symbolic_trace
from mtmc.protocols import CoderError
from mtmc.tasks import Task


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
        return [a.name for a in _flat([self.args, self.attrs.get("refs", [])]) if isinstance(a, Ref)]


@dataclass
class Graph:
    task: str
    inputs: list[str]
    nodes: list[GNode]
    result: Any  # Ref, or a tuple/list of Refs (the forward's return structure)

    def node(self, name: str) -> GNode:
        return self._index()[name]

    def _index(self) -> dict[str, GNode]:
        return {n.name: n for n in self.nodes}

    def users(self, name: str) -> list[GNode]:
        return [n for n in self.nodes if name in n.refs()]


def _flat(items: Any) -> list[Any]:
    if isinstance(items, list | tuple):
        return [x for item in items for x in _flat(item)]
    if isinstance(items, slice):
        return _flat([items.start, items.stop, items.step])
    return [items]


# --------------------------------------------------------------------------------------------------
# tracing
# --------------------------------------------------------------------------------------------------

def trace(task: Task, sizes: dict | None = None) -> Graph:
    """The canonical op graph of `task` at `sizes` (the file's own sizes by default)."""
    with torch.device("meta"):
        model = task.make_model(seed=0, sizes=sizes)
        inputs = task.make_inputs(seed=0, sizes=sizes)
    before = set(vars(model))
    try:
        with _traceable_factories():
            gm = symbolic_trace(model)
    except Exception as err:  # data-dependent control flow, unsupported Python on proxies, ...
        raise unsupported(f"tracing the reference failed ({type(err).__name__}: {err})") from None
    # fx keeps a tensor it meets while tracing (`torch.tensor(self.value)`) as a new attribute of the
    # model, `_tensor_constant0`: ModelNew, built by the reference's constructor, has none of them
    made_by_trace = set(vars(model)) - before
    for attr in sorted(made_by_trace):
        value = getattr(model, attr)
        if isinstance(value, torch.Tensor) and value.dim() != 0:
            raise unsupported(f"a {value.dim()}-D tensor constant of the forward (torch.tensor of a list, "
                              f"a global tensor; the trace kept it as self.{attr}): only a 0-d one is "
                              "taken, as a literal")
    results: dict[str, Any] = {}

    class _Recorder(fx.Interpreter):
        def run_node(self, n: fx.Node) -> Any:
            out = super().run_node(n)
            results[n.name] = out
            return out

    try:
        with torch.no_grad():
            _Recorder(gm).run(*inputs)
    except NotImplementedError as err:
        raise unsupported(f"an op with no meta kernel ({err})") from None
    except Exception as err:  # the graph fx recorded does not run on the task's own inputs
        raise unsupported(_replay_failure(gm, inputs, err)) from None
    return _Normalizer(task, gm, results, made_by_trace).run()


def _replay_failure(gm: fx.GraphModule, inputs: list, err: Exception) -> str:
    """Why the traced graph failed on the task's inputs, naming the forward parameters the task
    leaves out: fx traced them as tensors, so a `param is None` branch went the other way."""
    first = str(err).splitlines()[0] if str(err) else ""
    names = [n.target for n in gm.graph.nodes if n.op == "placeholder"][len(inputs):]
    left_out = f"; get_inputs leaves out {', '.join(names)}, traced as tensors" if names else ""
    return f"the traced forward failed on the task's inputs ({type(err).__name__}: {first}{left_out})"


# Tensor factories take no tensor argument, so fx cannot see a call whose sizes are traced values
# (`torch.ones(L, L)` with L = q.shape[-2]); while tracing they record themselves as graph nodes.
FACTORIES = ("ones", "zeros", "full", "empty", "arange", "eye")


@contextlib.contextmanager
def _traceable_factories():
    originals = {name: getattr(torch, name) for name in FACTORIES}

    def recording(fn):
        def factory(*args, **kwargs):
            proxies = [a for a in _flat([list(args), list(kwargs.values())]) if isinstance(a, fx.Proxy)]
            if proxies:
                return proxies[0].tracer.create_proxy("call_function", fn, args, kwargs)
            return fn(*args, **kwargs)
        return factory

    try:
        for name, fn in originals.items():
            setattr(torch, name, recording(fn))
        yield
    finally:
        for name, fn in originals.items():
            setattr(torch, name, fn)


class _Normalizer:
    def __init__(self, task: Task, gm: fx.GraphModule, results: dict[str, Any],
                 made_by_trace: set[str]) -> None:
        self.task = task.name
        self.made_by_trace = made_by_trace  # attributes fx added to the model: tensor constants
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
        while name in self.names or name in _RESERVED or _GENERATED.search(name):
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
                self.env[n.name] = self.param(n.target)
            elif n.op == "output":
                result = self.map_args(n.args[0])
            else:
                args = self.map_args(list(n.args))
                kwargs = self.map_args(dict(n.kwargs))
                self.env[n.name] = self.call(n, args, kwargs)
        return Graph(self.task, inputs, self.nodes, result)

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
        t)` is still elementwise, and kernels take it as a literal (lower.py, Body.load): the program
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
        bad = [a for a in _flat([args, list(kwargs.values())]) if isinstance(a, _Unsupported)]
        if n.target in (operator.getitem, getattr) and isinstance(args[0], tuple | list):
            index = {"values": 0, "indices": 1}.get(args[1], args[1])
            # an _Unsupported stays a value until something reads it (`out, _ = mha(x, x, x)`
            # unpacks the attention weights too); a node reading it, or the result, raises
            return args[0][index]
        if bad:
            raise unsupported(bad[0].what)
        if n.op == "call_module":
            module = self.gm.get_submodule(n.target)
            handler = _MODULES.get(type(module))
            if handler is None:
                raise unsupported(f"module {type(module).__name__}")
            return handler(self, n, module, str(n.target), args, kwargs, result)
        key: Any = n.target if n.op == "call_function" else f".{n.target}"
        spec = _FUNCS.get(key)
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
        bound = _bind(canonical, params, args, kwargs)
        if canonical == "alias" and n.target == "contiguous" and self.strided(n.args[0]):
            # a real copy (ShuffleNet's view / transpose / contiguous / view channel shuffle): the
            # view after it needs the new layout; a copy is glue, not compute
            return self.py(n.name, f"{render(args[0])}.contiguous()", result, args=[args[0]])
        if canonical in _VIEWS or (canonical in _PY_ARITH and not _has_tensor(self, args, kwargs)):
            ref = self.py_call(n, args, kwargs, result, canonical)
            if canonical == "narrow":  # an exclusive scan's slice (coders/template/scans.py)
                self.meta(ref).attrs.update(_narrow_attrs(args, kwargs))
            return ref
        return _HANDLERS[_handler_key(canonical)](self, n.name, canonical, bound, result)

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
            expr = _render_call(n, args, kwargs)
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
        if isinstance(result, torch.Tensor) and canonical not in _VIEWS:
            raise unsupported(f"op {n.target}")
        expr = _render_call(n, args, kwargs)
        alias = None
        if isinstance(result, torch.Tensor) and args and isinstance(args[0], Ref):
            src = self.meta(args[0])
            if src.is_tensor and _same_nonunit(src.shape, tuple(result.shape)) and \
                    canonical in ("view", "reshape", "unsqueeze", "squeeze", "flatten", "alias"):
                alias = src.name
        if isinstance(result, torch.Tensor) and canonical != "alias" and \
                canonical not in _PURE_VIEWS:
            raise unsupported(f"op {n.target}")
        return self.py(n.name, expr, result, alias_of=alias, args=list(args) + list(kwargs.values()))


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


def _same_nonunit(a: tuple[int, ...], b: tuple[int, ...]) -> bool:
    return [d for d in a if d != 1] == [d for d in b if d != 1]


def _has_tensor(nz: _Normalizer, args: Any, kwargs: Any) -> bool:
    return any(nz.is_tensor(a) for a in _flat([args, list(kwargs.values())]))


# --------------------------------------------------------------------------------------------------
# Python rendering of py nodes
# --------------------------------------------------------------------------------------------------

_OPERATORS = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
              operator.floordiv: "//", operator.mod: "%", operator.pow: "**", operator.eq: "==",
              operator.ne: "!=", operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">="}


def render(value: Any) -> str:
    if isinstance(value, Ref):
        return value.name
    if isinstance(value, torch.dtype):
        return str(value)
    if isinstance(value, slice):
        parts = [render(x) if x is not None else "" for x in (value.start, value.stop)]
        text = ":".join(parts)
        return text + (f":{render(value.step)}" if value.step is not None else "")
    if value is Ellipsis:
        return "..."
    if isinstance(value, tuple):
        inner = ", ".join(render(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(render(v) for v in value) + "]"
    if isinstance(value, torch.Size):
        return render(tuple(value))
    if isinstance(value, float) and not math.isfinite(value):
        return f"float('{value}')"
    if isinstance(value, str | int | float | bool) or value is None:
        return repr(value)
    raise unsupported(f"constant of type {type(value).__name__} in the forward")


def _render_call(n: fx.Node, args: list, kwargs: dict) -> str:
    kw = [f"{k}={render(v)}" for k, v in kwargs.items()]
    if n.op == "call_method":
        rest = ", ".join([render(a) for a in args[1:]] + kw)
        return f"{render(args[0])}.{n.target}({rest})"
    target = n.target
    if target is operator.getitem:
        index = args[1]
        inner = ", ".join(render(i) for i in index) if isinstance(index, tuple) else render(index)
        return f"{render(args[0])}[{inner}]"
    if target is getattr:
        return f"{render(args[0])}.{args[1]}"
    if target in _OPERATORS:
        return f"({render(args[0])} {_OPERATORS[target]} {render(args[1])})"
    if target is operator.neg:
        return f"(-{render(args[0])})"
    module = getattr(target, "__module__", None) or ""
    name = getattr(target, "__name__", str(target))
    if module.startswith("torch") or getattr(torch, name, None) is target:
        prefix = "torch."
    elif module in ("math", "builtins") or target in (min, max, int, float, len, abs):
        prefix = "math." if module == "math" else ""
    else:
        raise unsupported(f"call to {name}")
    inner = ", ".join([render(a) for a in args] + kw)
    return f"{prefix}{name}({inner})"


# --------------------------------------------------------------------------------------------------
# the op table: fx call -> (canonical op, parameter names)
# --------------------------------------------------------------------------------------------------

# Python names and the names generated launchers and kernels use for themselves: graph values never
# take them, so a value can always be passed by its own name.
_RESERVED = {"self", "torch", "nn", "F", "triton", "tl", "math", "min", "max", "sum", "abs", "len",
             "int", "float", "range", "input", "type", "list", "tuple", "pow", "round", "lambda", "None",
             "True", "False", "shape", "grid", "n", "M", "N", "K", "G", "CPG", "HW", "BLOCK", "BLOCK_M",
             "BLOCK_N", "BLOCK_K", "num_warps", "n_rows", "n_cols", "n_red", "n_inner", "n_outer",
             "n_batch", "qk_scale", "a2", "b2", "a3", "b3", "q3", "k3", "v3", "ws", "Sq", "Sk", "D", "Dv",
             "meta", "n_walk", "tri_rows", "tri_cols"}
_GENERATED = re.compile(r"^(size|i|acc_)\d*$|_ptr$")

_VIEWS = {"view", "reshape", "flatten", "unflatten", "squeeze", "unsqueeze", "transpose", "permute",
          "t", "expand", "expand_as", "getitem", "getattr", "size", "dim", "numel", "chunk", "split",
          "unbind", "narrow", "movedim", "swapaxes", "view_as", "reshape_as", "mT", "select"}
_PURE_VIEWS = _VIEWS
_PY_ARITH = {"add", "sub", "mul", "div", "floordiv", "mod", "pow", "neg", "rsub", "gt", "lt", "ge",
             "le", "eq", "ne"}

_FUNCS: dict[Any, tuple[str, list[str]]] = {}


def _reg(canonical: str, params: list[str], *keys: Any) -> None:
    for key in keys:
        _FUNCS[key] = (canonical, params)


_X = ["input"]
for _name in UNARY:
    _keys: list[Any] = [f".{_name}"]
    for _ns in (torch, F, torch.special):
        if getattr(_ns, _name, None) is not None and callable(getattr(_ns, _name)):
            _keys.append(getattr(_ns, _name))
    _reg(_name, _X + ["inplace"], *_keys)
_reg("abs", _X, abs, operator.abs)
_reg("neg", _X, operator.neg, torch.negative, ".negative")
_reg("sigmoid", _X, torch.special.expit)
_reg("gelu", _X + ["approximate"], F.gelu, ".gelu")
_reg("leaky_relu", _X + ["negative_slope", "inplace"], F.leaky_relu, ".leaky_relu")
_reg("elu", _X + ["alpha", "inplace"], F.elu, ".elu")
_reg("celu", _X + ["alpha", "inplace"], F.celu, torch.celu, ".celu")
_reg("softplus", _X + ["beta", "threshold"], F.softplus, ".softplus")
_reg("hardtanh", _X + ["min_val", "max_val", "inplace"], F.hardtanh, ".hardtanh")
_reg("clamp", _X + ["min", "max"], torch.clamp, torch.clip, ".clamp", ".clip")
_reg("threshold", _X + ["threshold", "value", "inplace"], F.threshold, torch.threshold)
_reg("hardshrink", _X + ["lambd"], F.hardshrink, torch.hardshrink, ".hardshrink")
_reg("softshrink", _X + ["lambd"], F.softshrink, ".softshrink")
_reg("add", _X + ["other", "alpha"], torch.add, ".add", operator.add, operator.iadd)
_reg("sub", _X + ["other", "alpha"], torch.sub, torch.subtract, ".sub", operator.sub, operator.isub)
_reg("rsub", _X + ["other", "alpha"], torch.rsub)
_reg("mul", _X + ["other"], torch.mul, torch.multiply, ".mul", operator.mul, operator.imul)
_reg("div", _X + ["other", "rounding_mode"], torch.div, torch.divide, torch.true_divide, ".div",
     ".true_divide", operator.truediv, operator.itruediv)
_reg("floordiv", _X + ["other"], operator.floordiv)
_reg("mod", _X + ["other"], operator.mod)
_reg("pow", _X + ["exponent"], torch.pow, ".pow", operator.pow)
_reg("maximum", _X + ["other"], torch.maximum, ".maximum", torch.fmax)
_reg("minimum", _X + ["other"], torch.minimum, ".minimum", torch.fmin)
for _cmp, _op in (("gt", operator.gt), ("lt", operator.lt), ("ge", operator.ge), ("le", operator.le),
                  ("eq", operator.eq), ("ne", operator.ne)):
    _reg(_cmp, _X + ["other"], getattr(torch, _cmp), f".{_cmp}", _op)
_reg("where", ["condition", "input", "other"], torch.where, ".where")
_reg("masked_fill", _X + ["mask", "value"], torch.masked_fill, ".masked_fill")
_reg("logical_not", _X, torch.logical_not, ".logical_not")
_reg("lerp", _X + ["end", "weight"], torch.lerp, ".lerp")
_reg("addcmul", _X + ["tensor1", "tensor2", "value"], torch.addcmul, ".addcmul")
_reg("cast_float", _X, ".float")
_reg("cast_half", _X, ".half")
_reg("cast_bfloat16", _X, ".bfloat16")
_reg("to", _X + ["dtype"], ".to")
_reg("type_as", _X + ["other"], ".type_as")
_reg("dropout", _X + ["p", "training", "inplace"], F.dropout, torch.dropout, F.dropout1d,
     F.dropout2d, F.alpha_dropout)
_reg("cat", ["tensors", "dim"], torch.cat, torch.concat, torch.concatenate)
_reg("batch_norm", _X + ["running_mean", "running_var", "weight", "bias", "training", "momentum",
                         "eps"], F.batch_norm)
_reg("alias", _X, ".contiguous", ".clone", ".detach", torch.clone, torch.detach)
# reductions and row-wise families
_reg("sum", _X + ["dim", "keepdim", "dtype"], torch.sum, ".sum")
_reg("mean", _X + ["dim", "keepdim", "dtype"], torch.mean, ".mean")
_reg("amax", _X + ["dim", "keepdim"], torch.amax, ".amax")
_reg("amin", _X + ["dim", "keepdim"], torch.amin, ".amin")
_reg("max", _X + ["dim", "keepdim"], torch.max, ".max")
_reg("min", _X + ["dim", "keepdim"], torch.min, ".min")
_reg("var", _X + ["dim", "unbiased", "keepdim"], torch.var, ".var")
_reg("std", _X + ["dim", "unbiased", "keepdim"], torch.std, ".std")
_reg("logsumexp", _X + ["dim", "keepdim"], torch.logsumexp, ".logsumexp")
_reg("norm", _X + ["p", "dim", "keepdim", "dtype"], torch.norm, ".norm")
_reg("softmax", _X + ["dim", "_stacklevel", "dtype"], F.softmax)
_reg("softmax", _X + ["dim", "dtype"], torch.softmax, ".softmax")
_reg("log_softmax", _X + ["dim", "_stacklevel", "dtype"], F.log_softmax)
_reg("log_softmax", _X + ["dim", "dtype"], torch.log_softmax, ".log_softmax")
_reg("layer_norm", _X + ["normalized_shape", "weight", "bias", "eps"], F.layer_norm)
_reg("rms_norm", _X + ["normalized_shape", "weight", "eps"], F.rms_norm)
_reg("group_norm", _X + ["num_groups", "weight", "bias", "eps"], F.group_norm)
_reg("instance_norm", _X + ["running_mean", "running_var", "weight", "bias", "use_input_stats",
                            "momentum", "eps"], F.instance_norm)
_reg("normalize", _X + ["p", "dim", "eps"], F.normalize)
_reg("cosine_similarity", ["x1", "x2", "dim", "eps"], F.cosine_similarity, torch.cosine_similarity)
_reg("cross_entropy", _X + ["target", "weight", "size_average", "ignore_index", "reduce",
                            "reduction", "label_smoothing"], F.cross_entropy)
_reg("nll_loss", _X + ["target", "weight", "size_average", "ignore_index", "reduce", "reduction"],
     F.nll_loss)
_reg("mse_loss", _X + ["target", "size_average", "reduce", "reduction"], F.mse_loss)
_reg("l1_loss", _X + ["target", "size_average", "reduce", "reduction"], F.l1_loss)
_reg("smooth_l1_loss", _X + ["target", "size_average", "reduce", "reduction", "beta"],
     F.smooth_l1_loss)
_reg("huber_loss", _X + ["target", "reduction", "delta"], F.huber_loss)
_reg("kl_div", _X + ["target", "size_average", "reduce", "reduction", "log_target"], F.kl_div)
_reg("binary_cross_entropy", _X + ["target", "weight", "size_average", "reduce", "reduction"],
     F.binary_cross_entropy)
_reg("binary_cross_entropy_with_logits", _X + ["target", "weight", "size_average", "reduce",
                                                "reduction", "pos_weight"],
     F.binary_cross_entropy_with_logits)
# matmuls and attention
_reg("linear", _X + ["weight", "bias"], F.linear)
_reg("matmul", _X + ["other"], torch.matmul, ".matmul", operator.matmul, torch.mm, ".mm",
     torch.bmm, ".bmm")
_reg("addmm", _X + ["mat1", "mat2", "beta", "alpha"], torch.addmm, ".addmm")
_reg("baddbmm", _X + ["mat1", "mat2", "beta", "alpha"], torch.baddbmm, ".baddbmm")
_reg("sdpa", ["query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa"],
     F.scaled_dot_product_attention)
for _conv in ("conv1d", "conv2d", "conv3d"):
    _reg(_conv, _X + ["weight", "bias", "stride", "padding", "dilation", "groups"],
         getattr(F, _conv), getattr(torch, _conv))
for _conv in ("conv_transpose1d", "conv_transpose2d", "conv_transpose3d"):
    _reg(_conv, _X + ["weight", "bias", "stride", "padding", "output_padding", "groups", "dilation"],
         getattr(F, _conv), getattr(torch, _conv))
for _pool, _params, _keys in pooling.FUNCTIONS:
    _reg(_pool, _params, *_keys)
# views and shape queries: emitted as Python
for _view in ("view", "reshape", "flatten", "unflatten", "squeeze", "unsqueeze", "transpose",
              "permute", "t", "expand", "expand_as", "size", "dim", "numel", "chunk", "split",
              "unbind", "narrow", "movedim", "swapaxes", "view_as", "reshape_as", "select"):
    _keys = [f".{_view}"] + ([getattr(torch, _view)] if hasattr(torch, _view) else [])
    _reg(_view, ["*"], *_keys)
_reg("getitem", ["*"], operator.getitem)
for _factory in FACTORIES:
    _reg("factory", ["*"], getattr(torch, _factory))
_reg("tensor", ["*"], torch.tensor, torch.as_tensor, torch.scalar_tensor)
_reg("triu", ["*"], torch.triu, ".triu")
_reg("tril", ["*"], torch.tril, ".tril")
_reg("getattr", ["*"], getattr)
# scans and arg-reductions (coders/template/scans.py)
_reg("cumsum", _X + ["dim", "dtype"], torch.cumsum, ".cumsum")
_reg("cumprod", _X + ["dim", "dtype"], torch.cumprod, ".cumprod")
_reg("flip", _X + ["dims"], torch.flip, ".flip")
_reg("zeros_like", _X + ["dtype", "layout", "device", "requires_grad", "memory_format"], torch.zeros_like)
_reg("argmax", _X + ["dim", "keepdim"], torch.argmax, ".argmax")
_reg("argmin", _X + ["dim", "keepdim"], torch.argmin, ".argmin")
_reg("einsum", ["*"], torch.einsum)


def _bind(canonical: str, params: list[str], args: list, kwargs: dict) -> dict[str, Any]:
    if params == ["*"]:
        return {"args": args, "kwargs": kwargs}
    if len(args) > len(params):
        raise unsupported(f"{canonical} with {len(args)} positional arguments")
    bound = dict(zip(params, args, strict=False))
    for key, value in kwargs.items():
        bound[key] = value
    return bound


def _handler_key(canonical: str) -> str:
    if canonical in _HANDLERS:
        return canonical
    if canonical in UNARY:
        return "unary"
    raise unsupported(f"op {canonical}")


# --------------------------------------------------------------------------------------------------
# handlers: one canonical op -> graph nodes
# --------------------------------------------------------------------------------------------------

def _dims(nz: _Normalizer, x: Ref, dim: Any) -> tuple[int, int]:
    """Normalize `dim` (None, int, tuple) to a contiguous range [d0, d1) of x's dims."""
    rank = len(nz.shape(x))
    if dim is None or dim == () or dim == []:
        return (0, rank)
    dims = sorted({d % rank for d in (dim if isinstance(dim, list | tuple) else [dim])}) if rank else []
    if not all(isinstance(d, int) for d in dims):
        raise unsupported("a reduction over a computed dim")
    if dims and dims != list(range(dims[0], dims[-1] + 1)):
        raise unsupported(f"a reduction over non-adjacent dims {dims}")
    return (dims[0], dims[-1] + 1) if dims else (0, 0)


def _h_unary(nz: _Normalizer, name: str, op: str, b: dict, result: Any) -> Ref:
    if op == "relu6":
        return nz.add(name, "pw", "hardtanh", [b["input"]], {"min_val": 0.0, "max_val": 6.0},
                      like=result)
    return nz.add(name, "pw", op, [b["input"]], like=result)


def _h_pw(nz: _Normalizer, name: str, op: str, b: dict, result: Any) -> Ref:
    """Elementwise ops with parameters; args are tensors, Python numbers or shape values."""
    x = b.get("input")
    attrs: dict[str, Any] = {}
    if op == "gelu":
        attrs["approximate"] = b.get("approximate", "none")
        args = [x]
    elif op in ("leaky_relu",):
        attrs["negative_slope"] = float(b.get("negative_slope", 0.01))
        args = [x]
    elif op in ("elu", "celu"):
        attrs["alpha"] = float(b.get("alpha", 1.0))
        args = [x]
    elif op == "softplus":
        attrs = {"beta": float(b.get("beta", 1.0)), "threshold": float(b.get("threshold", 20.0))}
        args = [x]
    elif op == "hardtanh":
        attrs = {"min_val": float(b.get("min_val", -1.0)), "max_val": float(b.get("max_val", 1.0))}
        args = [x]
    elif op == "clamp":
        lo, hi = b.get("min"), b.get("max")
        if isinstance(lo, Ref) or isinstance(hi, Ref):
            args = [x, lo, hi]
            attrs = {"tensor_bounds": True}
        else:
            attrs = {"min": lo, "max": hi}
            args = [x]
    elif op == "threshold":
        attrs = {"threshold": float(b["threshold"]), "value": float(b["value"])}
        args = [x]
    elif op in ("hardshrink", "softshrink"):
        attrs = {"lambd": float(b.get("lambd", 0.5))}
        args = [x]
    elif op in ("add", "sub", "rsub"):
        other, alpha = b["other"], b.get("alpha", 1)
        if alpha != 1:
            other = nz.pw("mul", [other, alpha], base=f"{name}_alpha")
        args = [other, x] if op == "rsub" else [x, other]
        op = "sub" if op == "rsub" else op
    elif op == "div":
        mode = b.get("rounding_mode")
        if mode not in (None, "floor", "trunc"):
            raise unsupported(f"div rounding_mode={mode}")
        attrs = {"rounding_mode": mode} if mode else {}
        args = [x, b["other"]]
    elif op == "pow":
        exponent = b["exponent"]
        args = [x, exponent]
    elif op in ("masked_fill",):
        args = [b["mask"], b["value"], x]
        op = "where"
    elif op == "where":
        args = [b["condition"], x, b["other"]]
    elif op == "lerp":
        args = [x, b["end"], b["weight"]]
    elif op == "addcmul":
        args = [x, b["tensor1"], b["tensor2"]]
        attrs = {"value": float(b.get("value", 1))}
    else:
        args = [x] + [b[k] for k in ("other",) if k in b]
    return nz.add(name, "pw", op, args, attrs, like=result)


def _h_cast(nz: _Normalizer, name: str, op: str, b: dict, result: Any) -> Ref:
    """Casts keep the traced dtype; a cast to the input's own dtype (or a device move) is a no-op."""
    x = b["input"]
    if not isinstance(result, torch.Tensor):
        raise unsupported(f"{op} on a non-tensor")
    if result.dtype == nz.meta(x).dtype:
        return x
    return nz.add(name, "pw", "cast", [x], {"dtype": str(result.dtype).removeprefix("torch.")},
                  like=result)


def _h_dropout(nz: _Normalizer, name: str, op: str, b: dict, result: Any) -> Ref:
    if b.get("training", op != "dropout"):  # F.dropout defaults to training=True
        raise unsupported("dropout in training mode")
    return b["input"]


def _h_alias(nz: _Normalizer, name: str, op: str, b: dict, result: Any) -> Ref:
    return b["input"]


def _h_reduce(nz: _Normalizer, name: str, op: str, b: dict, result: Any) -> Any:
    x = b["input"]
    if op in ("max", "min") and nz.is_tensor(b.get("dim")):
        # torch.max(a, b) is elementwise
        return nz.add(name, "pw", "maximum" if op == "max" else "minimum", [x, b.get("dim")],
                      like=result)
    if b.get("dtype") is not None:
        raise unsupported(f"{op} with dtype=")
    if op in ("max", "min") and b.get("dim") is not None:
        values = result[0]
        red = _dims(nz, x, b["dim"])
        keepdim = bool(b.get("keepdim", False))
        ref = nz.red("amax" if op == "max" else "amin", x, red, f"{name}_values", tuple(values.shape),
                     attrs={"keepdim": keepdim})
        if not nz.meta(x).dtype.is_floating_point:
            return (ref, _Unsupported(f"{op}(dim=...) indices of an integer tensor"))
        from coders.template import scans  # imported late: it builds on this module

        arg = "argmax" if op == "max" else "argmin"
        return (ref, scans.trace_indices(nz, f"{name}_indices", arg, x, red[0], keepdim, result[1]))
    red = _dims(nz, x, b.get("dim"))
    attrs: dict[str, Any] = {"keepdim": bool(b.get("keepdim", False))}
    canonical = {"max": "amax", "min": "amin"}.get(op, op)
    if op in ("var", "std"):
        correction = b.get("correction")
        if correction is None:
            unbiased = b.get("unbiased", True)
            correction = 1 if unbiased in (True, None) else 0
        attrs["correction"] = float(correction)
    if op == "norm":
        if b.get("p", "fro") not in ("fro", 2, 2.0, None):
            raise unsupported(f"norm with p={b.get('p')}")
    return nz.red(canonical, x, red, name, tuple(result.shape), attrs=attrs)


class _Unsupported:
    """A value the trace produced but the coder cannot compute (raises when used)."""

    def __init__(self, what: str) -> None:
        self.what = what


def _h_rowwise(nz: _Normalizer, name: str, op: str, b: dict, result: Any) -> Ref:
    x = b["input"]
    rank = len(nz.shape(x))
    if op in ("softmax", "log_softmax"):
        if b.get("dtype") is not None:
            raise unsupported(f"{op} with dtype=")
        dim = b.get("dim")
        if dim is None:
            raise unsupported(f"{op} without dim")
        d = dim % rank
        return nz.red(op, x, (d, d + 1), name, tuple(result.shape))
    if op in ("layer_norm", "rms_norm"):
        shape = b["normalized_shape"]
        n = len(shape) if isinstance(shape, list | tuple) else 1
        eps = b.get("eps")
        if eps is None:
            eps = 1e-5 if op == "layer_norm" else None
        extra = [b.get("weight"), b.get("bias")] if op == "layer_norm" else [b.get("weight"), None]
        return nz.red(op, x, (rank - n, rank), name, tuple(result.shape), extra=extra,
                      attrs={"eps": eps})
    if op == "group_norm":
        groups = b["num_groups"]
        groups = groups.name if isinstance(groups, Ref) else int(groups)
        return nz.red(op, x, (1, rank), name, tuple(result.shape),
                      extra=[b.get("weight"), b.get("bias")],
                      attrs={"eps": float(b.get("eps", 1e-5)), "groups": groups},
                      refs=[Ref(groups)] if isinstance(groups, str) else None)
    if op == "normalize":
        if float(b.get("p", 2.0)) != 2.0:
            raise unsupported("normalize with p != 2")
        d = b.get("dim", 1) % rank
        return nz.red(op, x, (d, d + 1), name, tuple(result.shape),
                      attrs={"eps": float(b.get("eps", 1e-12))})
    raise unsupported(f"op {op}")


def _h_instance_norm(nz: _Normalizer, name: str, op: str, b: dict, result: Any) -> Ref:
    """F.instance_norm. With use_input_stats (the default) and running statistics given it would also
    update them in place, a side effect a kernel does not reproduce: refused."""
    x, mean, var = b["input"], b.get("running_mean"), b.get("running_var")
    use_input_stats = b.get("use_input_stats", True)
    eps = b.get("eps", 1e-5)
    if not isinstance(use_input_stats, bool) or isinstance(eps, Ref):
        raise unsupported("instance_norm with a computed use_input_stats or eps")
    if use_input_stats and (mean is not None or var is not None):
        raise unsupported("instance_norm updating running statistics (use_input_stats=True)")
    if use_input_stats:
        return _instance_stats_norm(nz, name, x, b.get("weight"), b.get("bias"), float(eps), result)
    if not (isinstance(mean, Ref) and isinstance(var, Ref)):
        raise unsupported("instance_norm with use_input_stats=False and no running statistics")
    return _running_stats_norm(nz, name, x, mean, var, b.get("weight"), b.get("bias"), float(eps))


def _h_cosine(nz: _Normalizer, name: str, op: str, b: dict, result: Any) -> Ref:
    x1, x2 = b["x1"], b["x2"]
    if nz.shape(x1) != nz.shape(x2):
        raise unsupported("cosine_similarity with broadcasting")
    d = b.get("dim", 1) % len(nz.shape(x1))
    return nz.red("cosine_similarity", x1, (d, d + 1), name, tuple(result.shape), extra=[x2],
                  attrs={"eps": float(b.get("eps", 1e-8))})


def _h_loss(nz: _Normalizer, name: str, op: str, b: dict, result: Any) -> Ref:
    x, t = b["input"], b["target"]
    reduction = b.get("reduction", "mean")
    if b.get("size_average") is not None or b.get("reduce") is not None:
        raise unsupported(f"{op} with the deprecated size_average/reduce arguments")
    if op in ("cross_entropy", "nll_loss"):
        if b.get("weight") is not None:
            raise unsupported(f"{op} with class weights")
        if len(nz.shape(x)) != 2 or nz.meta(t).dtype.is_floating_point:
            raise unsupported(f"{op} other than (N, C) logits with class-index targets")
        ignore = int(b.get("ignore_index", -100))
        rows = nz.red("ce_rows" if op == "cross_entropy" else "nll_rows", x, (1, 2), f"{name}_rows",
                      nz.shape(x)[:1], extra=[t],
                      attrs={"ignore_index": ignore,
                             "label_smoothing": float(b.get("label_smoothing", 0.0) or 0.0)})
        if reduction == "none":
            return rows
        if reduction == "sum":
            return nz.red("sum", rows, (0, 1), name, (), attrs={"keepdim": False})
        return nz.red("masked_mean", rows, (0, 1), name, (), extra=[t], attrs={"ignore_index": ignore})
    if op in ("binary_cross_entropy", "binary_cross_entropy_with_logits"):
        if b.get("weight") is not None or b.get("pos_weight") is not None:
            raise unsupported(f"{op} with weights")
    if nz.shape(x) != nz.shape(t):
        raise unsupported(f"{op} with broadcasting")
    attrs = {k: float(b[k]) for k in ("beta", "delta") if b.get(k) is not None}
    if op == "kl_div":
        attrs["log_target"] = bool(b.get("log_target", False))
    elementwise = nz.pw(op, [x, t], base=f"{name}_elem", attrs=attrs)
    rank = len(nz.shape(x))
    if reduction == "none":
        return elementwise
    if reduction == "sum":
        return nz.red("sum", elementwise, (0, rank), name, (), attrs={"keepdim": False})
    if reduction == "mean":
        return nz.red("mean", elementwise, (0, rank), name, (), attrs={"keepdim": False})
    if reduction == "batchmean" and op == "kl_div":
        batch = nz.py(f"{name}_batch", f"{elementwise.name}.shape[0]", None, args=[elementwise])
        return nz.red("sum_div", elementwise, (0, rank), name, (), extra=[batch],
                      attrs={"keepdim": False})
    raise unsupported(f"{op} with reduction={reduction}")


def _h_matmul(nz: _Normalizer, name: str, op: str, b: dict, result: Any) -> Ref:
    if op == "linear":
        x, w, bias = b["input"], b["weight"], b.get("bias")
        if len(nz.shape(w)) != 2:
            raise unsupported("linear with a non-2D weight")
        return nz.add(name, "matmul", "linear", [x, w, bias], {"form": "linear"}, like=result)
    if op in ("addmm", "baddbmm"):
        bias, a, m = b["input"], b["mat1"], b["mat2"]
        beta, alpha = b.get("beta", 1), b.get("alpha", 1)
        form = "mm" if op == "addmm" else "bmm"
        ref = nz.add(f"{name}_mm" if (alpha != 1 or beta != 0) else name, "matmul", form, [a, m, None],
                     {"form": form}, like=result)
        if alpha != 1:
            ref = nz.pw("mul", [ref, alpha], base=f"{name}_alpha" if beta != 0 else name)
        if beta == 0:
            return ref
        if beta != 1:
            bias = nz.pw("mul", [bias, beta], base=f"{name}_beta")
        return nz.pw("add", [ref, bias], base=f"{name}_bias")
    a, m = b["input"], b["other"]
    sa, sb = nz.shape(a), nz.shape(m)
    if len(sa) < 2 or len(sb) < 2:
        raise unsupported("matmul with a 1-D operand")
    if len(sb) == 2:
        form = "mm"  # (..., M, K) @ (K, N): leading dims of a fold into M
    else:
        form = "bmm"
        if len(sa) != len(sb):
            raise unsupported("matmul with operands of different ranks")
    return nz.add(name, "matmul", form, [a, m, None], {"form": form}, like=result)


def _h_einsum(nz: _Normalizer, name: str, op: str, b: dict, result: Any) -> Ref:
    """An einsum that is one matmul (einsum_form) becomes that matmul node."""
    args, kwargs = list(b["args"]), b["kwargs"]
    if not args or not isinstance(args[0], str) or kwargs:
        raise unsupported("einsum without a literal equation")
    equation, operands = args[0], args[1:]
    if len(operands) == 1 and isinstance(operands[0], list | tuple):
        operands = list(operands[0])
    form = einsum_form(equation) if len(operands) == 2 else None
    if form is None or not all(nz.is_tensor(t) for t in operands):
        raise unsupported(f"einsum {equation!r} (only the equations of one matmul or bmm)")
    return nz.add(name, "matmul", form, [operands[0], operands[1], None], {"form": form}, like=result)


def einsum_form(equation: str) -> str | None:
    """The matmul node form an einsum equation of two operands equals, or None:
    "...k,kn->...n" is "mm" (A's leading dims fold into M), "...k,nk->...n" is "linear" (B is (N, K)),
    "b..mk,b..kn->b..mn" is "bmm" (the same batch letters, in the same order, leading every term)."""
    text = equation.replace(" ", "")
    if "->" not in text or "." in text:
        return None
    lhs, out = text.split("->")
    terms = lhs.split(",")
    if len(terms) != 2 or any(len(set(t)) != len(t) or not t.isalpha() for t in terms + [out]):
        return None
    ta, tb = terms
    contracted = (set(ta) & set(tb)) - set(out)
    if len(contracted) != 1 or len(tb) < 2:
        return None
    c = contracted.pop()
    if len(tb) == 2 and len(ta) >= 2 and ta[-1] == c:
        n = tb.replace(c, "")
        if n not in ta and out == ta[:-1] + n:
            return "mm" if tb[0] == c else "linear"
        return None
    batch = ta[:-2]
    if len(ta) == len(tb) >= 3 and tb[:-2] == batch and ta[-1] == c == tb[-2] and \
            out == batch + ta[-2] + tb[-1] and ta[-2] != tb[-1]:
        return "bmm"
    return None


def _h_walk(nz: _Normalizer, name: str, op: str, b: dict, result: Any) -> Ref:
    """Scans, arg-reductions and the flips and zeros KernelBench writes around scans (the cat of
    an exclusive scan: _h_cat)."""
    from coders.template import scans  # imported late: it builds on this module

    handlers = {"cumsum": scans.trace_scan, "cumprod": scans.trace_scan, "flip": scans.trace_flip,
                "zeros_like": scans.trace_zeros_like,
                "argmax": scans.trace_argreduce, "argmin": scans.trace_argreduce}
    return handlers[op](nz, name, op, b, result)


def _h_sdpa(nz: _Normalizer, name: str, op: str, b: dict, result: Any) -> Ref:
    if b.get("attn_mask") is not None or b.get("dropout_p", 0.0) or b.get("enable_gqa"):
        raise unsupported("scaled_dot_product_attention with a mask, dropout or GQA")
    q, k, v = b["query"], b["key"], b["value"]
    if not (nz.shape(q)[:-2] == nz.shape(k)[:-2] == nz.shape(v)[:-2]) or len(nz.shape(q)) < 3:
        raise unsupported("attention with broadcast batch dims")
    scale = b.get("scale")
    if isinstance(scale, Ref):
        raise unsupported("attention with a computed scale")
    return nz.add(name, "attention", "attention", [q, k, v],
                  {"causal": bool(b.get("is_causal", False)), "scale": scale}, like=result)


def _h_conv(nz: _Normalizer, name: str, op: str, b: dict, result: Any) -> Ref:
    """A Triton convolution, lowered by coders/template/conv_lower.py. Its geometry stays as the
    call gave it; numbers only: a computed stride is no structure to specialize a kernel on."""
    attrs = {"stride": b.get("stride", 1), "padding": b.get("padding", 0),
             "dilation": b.get("dilation", 1), "groups": b.get("groups", 1)}
    for key, value in attrs.items():
        if any(isinstance(v, Ref) for v in _flat([value])):
            raise unsupported(f"{op} with a computed {key}")
        attrs[key] = list(value) if isinstance(value, list | tuple) else value
    return nz.add(name, "conv", op, [b["input"], b["weight"], b.get("bias")], attrs, like=result)


def _h_conv_transpose(nz: _Normalizer, name: str, op: str, b: dict, result: Any) -> Ref:
    from coders.template import conv_transpose_lower  # imported late: it builds on this module

    return conv_transpose_lower.trace_function(nz, name, op, b, result)


def _h_pool(nz: _Normalizer, name: str, op: str, b: dict, result: Any) -> Any:
    return _pool_node(nz, name, pooling.from_call(op, b), b["input"], result)


def _pool_node(nz: _Normalizer, name: str, call: pooling.PoolCall, x: Ref, result: Any) -> Any:
    """A pool node and the tuple of its parameters (coders/template/pooling.py); with indices, the
    (values, indices) pair. Global average pooling is a mean over the pooled dims."""
    rank = len(nz.shape(x))
    if not nz.meta(x).dtype.is_floating_point or rank not in (call.nd + 1, call.nd + 2):
        raise unsupported(f"{call.kind} pooling of a {rank}-D {nz.meta(x).dtype} tensor")
    values = result[0] if call.indices else result
    if call.is_global_average():
        return nz.red("mean", x, (rank - call.nd, rank), name, tuple(values.shape), attrs={"keepdim": True})
    fields = pooling.FIELDS[call.kind]
    expr = "(" + ", ".join(call.exprs.get(f) or render(call.values[f]) for f in fields) + ",)"
    refs = [v for v in _flat(list(call.values.values())) if isinstance(v, Ref)]
    params = nz.py(f"{name}_params", expr, None, args=refs)
    pool = nz.add(name, "pool", call.kind, [x, params], pooling.node_attrs(call), like=values)
    if not call.indices:
        return pool
    indices = nz.add(f"{name}_indices", "pool_indices", "", [pool], like=result[1])
    nz.meta(pool).attrs["indices"] = indices.name
    return (pool, indices)


_HANDLERS = {
    "unary": _h_unary,
    **{op: _h_pw for op in ("gelu", "leaky_relu", "elu", "celu", "softplus", "hardtanh", "clamp",
                            "threshold", "hardshrink", "softshrink", "add", "sub", "rsub", "mul",
                            "div", "floordiv", "mod", "pow", "maximum", "minimum", "gt", "lt", "ge",
                            "le", "eq", "ne", "where", "masked_fill", "logical_not", "lerp",
                            "addcmul")},
    **{op: _h_cast for op in ("cast_float", "cast_half", "cast_bfloat16", "to", "type_as")},
    "dropout": _h_dropout,
    "alias": _h_alias,
    **{op: _h_reduce for op in ("sum", "mean", "amax", "amin", "max", "min", "var", "std",
                                "logsumexp", "norm")},
    **{op: _h_rowwise for op in ("softmax", "log_softmax", "layer_norm", "rms_norm", "group_norm",
                                 "normalize")},
    "instance_norm": _h_instance_norm,
    "cosine_similarity": _h_cosine,
    **{op: _h_loss for op in ("cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss",
                              "huber_loss", "kl_div", "binary_cross_entropy",
                              "binary_cross_entropy_with_logits")},
    **{op: _h_matmul for op in ("linear", "matmul", "addmm", "baddbmm")},
    "sdpa": _h_sdpa,
    "einsum": _h_einsum,
    **{op: _h_walk for op in ("cumsum", "cumprod", "flip", "zeros_like", "argmax", "argmin")},
    **{op: _h_conv for op in ("conv1d", "conv2d", "conv3d")},
    **{op: _h_conv_transpose for op in ("conv_transpose1d", "conv_transpose2d", "conv_transpose3d")},
    **{op: _h_pool for op in pooling.CANONICAL},
}


# --------------------------------------------------------------------------------------------------
# modules
# --------------------------------------------------------------------------------------------------

def _m_linear(nz, n, module, path, args, kwargs, result):
    bias = nz.param(f"{path}.bias") if module.bias is not None else None
    return _h_matmul(nz, n.name, "linear", {"input": args[0], "weight": nz.param(f"{path}.weight"),
                                            "bias": bias}, result)


def _m_conv(nz, n, module, path, args, kwargs, result):
    if module.padding_mode != "zeros":
        raise unsupported(f"{type(module).__name__} with padding_mode={module.padding_mode!r} "
                          "(only 'zeros')")
    op = {nn.Conv1d: "conv1d", nn.Conv2d: "conv2d", nn.Conv3d: "conv3d"}[type(module)]
    bias = nz.param(f"{path}.bias") if module.bias is not None else None
    padding = module.padding if isinstance(module.padding, str) else tuple(module.padding)
    b = {"input": args[0], "weight": nz.param(f"{path}.weight"), "bias": bias,
         "stride": tuple(module.stride), "padding": padding,
         "dilation": tuple(module.dilation), "groups": module.groups}
    return _h_conv(nz, n.name, op, b, result)


def _m_conv_transpose(nz, n, module, path, args, kwargs, result):
    from coders.template import conv_transpose_lower  # imported late: it builds on this module

    return conv_transpose_lower.trace_module(nz, n, module, path, args, kwargs, result)


def _m_norm(nz, n, module, path, args, kwargs, result):
    weight = nz.param(f"{path}.weight") if getattr(module, "weight", None) is not None else None
    bias = nz.param(f"{path}.bias") if getattr(module, "bias", None) is not None else None
    if isinstance(module, nn.LayerNorm):
        b = {"input": args[0], "normalized_shape": module.normalized_shape, "weight": weight,
             "bias": bias, "eps": module.eps}
        return _h_rowwise(nz, n.name, "layer_norm", b, result)
    if isinstance(module, nn.RMSNorm):
        b = {"input": args[0], "normalized_shape": module.normalized_shape, "weight": weight,
             "eps": module.eps}
        return _h_rowwise(nz, n.name, "rms_norm", b, result)
    # the group count is read from the module at run time: it may differ between task sizes
    groups = nz.py(f"{n.name}_groups", f"{self_path(path)}.num_groups", None)
    b = {"input": args[0], "num_groups": groups, "weight": weight, "bias": bias, "eps": module.eps}
    return _h_rowwise(nz, n.name, "group_norm", b, result)


def _m_batchnorm(nz, n, module, path, args, kwargs, result):
    def param(attr: str) -> Callable[[], Ref] | None:
        # looked up where the lowering reads it, which orders the program's parameter reads
        return (lambda: nz.param(f"{path}.{attr}")) if getattr(module, attr, None) is not None else None

    if module.training or not module.track_running_stats:
        # what PyTorch does then: normalise with the batch's statistics (the running ones it also
        # updates are state, not output; the forward never reads them in this mode)
        return _batch_norm_batch_stats(nz, n.name, args[0], param("weight"), param("bias"), float(module.eps))
    return _batch_norm_running_stats(nz, n.name, args[0], param("running_mean"), param("running_var"),
                                     param("weight"), param("bias"), float(module.eps))


def _h_batch_norm(nz: _Normalizer, name: str, op: str, b: dict, result: Any) -> Ref:
    """F.batch_norm: batch statistics with training=True or without running statistics."""
    eps = b.get("eps", 1e-5)
    if any(isinstance(v, Ref) for v in (b.get("training"), eps)):
        raise unsupported("batch_norm with a computed training flag or eps")

    def given(key: str) -> Callable[[], Ref] | None:
        ref = b.get(key)
        return (lambda: ref) if ref is not None else None

    if b.get("training", False) or b.get("running_mean") is None or b.get("running_var") is None:
        return _batch_norm_batch_stats(nz, name, b["input"], given("weight"), given("bias"), float(eps))
    return _batch_norm_running_stats(nz, name, b["input"], given("running_mean"), given("running_var"),
                                     given("weight"), given("bias"), float(eps))


_HANDLERS["batch_norm"] = _h_batch_norm


def _h_cat(nz: _Normalizer, name: str, op: str, b: dict, result: Any) -> Ref:
    from coders.template import scans  # imported late: it builds on this module

    if (scan := scans.trace_exclusive_scan(nz, name, b, result)) is not None:
        return scan  # KernelBench's exclusive cumsum: cat of leading zeros and a shifted cumsum
    parts = list(b["tensors"])
    if not parts or not all(nz.is_tensor(p) for p in parts) or isinstance(b.get("dim", 0), Ref):
        raise unsupported("cat of a computed list or along a computed dim")
    rank = len(nz.shape(parts[0]))
    if any(len(nz.shape(p)) != rank for p in parts):
        raise unsupported("cat of tensors of different ranks")
    return nz.add(name, "cat", "cat", parts, {"dim": b.get("dim", 0) % rank}, like=result)


_HANDLERS["cat"] = _h_cat


def _per_channel(nz: _Normalizer, name: str, get: Callable[[], Ref], rank: int) -> Ref:
    """A (C,) parameter viewed as (C, 1, ...) so it broadcasts over an (N, C, *spatial) input."""
    p = get()
    view = "(-1" + ", 1" * (rank - 2) + ")"
    meta = torch.empty(nz.shape(p)[0], *([1] * (rank - 2)), device="meta", dtype=nz.meta(p).dtype)
    return nz.py(name, f"{p.name}.view{view}", meta, alias_of=p.name, args=[p])


def _batch_norm_running_stats(nz: _Normalizer, name: str, x: Ref, mean: Callable[[], Ref],
                              var: Callable[[], Ref], weight: Callable[[], Ref] | None,
                              bias: Callable[[], Ref] | None, eps: float) -> Ref:
    rank = len(nz.shape(x))
    mean = _per_channel(nz, f"{name}_running_mean", mean, rank)
    var = _per_channel(nz, f"{name}_running_var", var, rank)
    y = nz.pw("sub", [x, mean], base=f"{name}_centered")
    inv = nz.pw("add", [var, eps], base=f"{name}_var_eps")
    inv = nz.pw("rsqrt", [inv], base=f"{name}_inv_std")
    return _batch_norm_affine(nz, name, nz.pw("mul", [y, inv], base=f"{name}_normed"), weight, bias)


def _batch_norm_batch_stats(nz: _Normalizer, name: str, x: Ref, weight: Callable[[], Ref] | None,
                            bias: Callable[[], Ref] | None, eps: float) -> Ref:
    """Per-channel mean and biased variance over the batch and the spatial dims, two passes (the
    centred values squared, not E[x^2] - mean^2, which cancels). The reductions run over
    contiguous dims: first each (n, c) plane, then the batch (equal-sized planes, so the mean of
    the plane means is the channel mean)."""
    shape = nz.shape(x)
    rank = len(shape)
    if rank < 2:
        raise unsupported("batch norm of a tensor without a channel dim")

    def channel_mean(value: Ref, base: str) -> Ref:
        if rank > 2:
            value = nz.red("mean", value, (2, rank), f"{base}_planes", (*shape[:2], *[1] * (rank - 2)),
                           attrs={"keepdim": True})
        return nz.red("mean", value, (0, 1), base, (1, shape[1], *[1] * (rank - 2)),
                      attrs={"keepdim": True})

    centered = nz.pw("sub", [x, channel_mean(x, f"{name}_mean")], base=f"{name}_centered")
    squares = nz.pw("mul", [centered, centered], base=f"{name}_sq")
    inv = nz.pw("add", [channel_mean(squares, f"{name}_var"), eps], base=f"{name}_var_eps")
    inv = nz.pw("rsqrt", [inv], base=f"{name}_inv_std")
    return _batch_norm_affine(nz, name, nz.pw("mul", [centered, inv], base=f"{name}_normed"), weight, bias)


def _batch_norm_affine(nz: _Normalizer, name: str, y: Ref, weight: Callable[[], Ref] | None,
                       bias: Callable[[], Ref] | None) -> Ref:
    rank = len(nz.shape(y))
    if weight is not None and bias is not None:  # nn.BatchNorm: affine has both
        y = nz.pw("mul", [y, _per_channel(nz, f"{name}_weight", weight, rank)], base=f"{name}_scaled")
        return nz.pw("add", [y, _per_channel(nz, f"{name}_bias", bias, rank)], base=name)
    if weight is not None:
        return nz.pw("mul", [y, _per_channel(nz, f"{name}_weight", weight, rank)], base=name)
    if bias is not None:
        return nz.pw("add", [y, _per_channel(nz, f"{name}_bias", bias, rank)], base=name)
    return y


def _affine_params(nz: _Normalizer, module: nn.Module, path: str) -> tuple[Ref | None, Ref | None]:
    if not getattr(module, "affine", False):
        return None, None
    return nz.param(f"{path}.weight"), nz.param(f"{path}.bias")


def _running_stats_norm(nz: _Normalizer, name: str, x: Ref, mean: Ref, var: Ref, weight: Ref | None,
                        bias: Ref | None, eps: float) -> Ref:
    """(x - mean) / sqrt(var + eps) [* weight + bias] with per-channel (dim 1) statistics known
    before the call: batch norm in eval mode, instance norm reading its running statistics. It is
    elementwise, so it fuses into the producer's epilogue."""
    rank = len(nz.shape(x))
    if rank < 2:
        raise unsupported(f"{name}: a norm over channels of a {rank}-D input")
    view = "(-1" + ", 1" * (rank - 2) + ")"

    def channel(ref: Ref, what: str) -> Ref:
        meta = torch.empty(nz.shape(ref)[0], *([1] * (rank - 2)), device="meta", dtype=nz.meta(ref).dtype)
        return nz.py(f"{name}_{what}", f"{ref.name}.view{view}", meta, alias_of=ref.name, args=[ref])

    y = nz.pw("sub", [x, channel(mean, "running_mean")], base=f"{name}_centered")
    inv = nz.pw("add", [channel(var, "running_var"), eps], base=f"{name}_var_eps")
    inv = nz.pw("rsqrt", [inv], base=f"{name}_inv_std")
    y = nz.pw("mul", [y, inv], base=f"{name}_normed" if weight is not None or bias is not None else name)
    if weight is not None:
        y = nz.pw("mul", [y, channel(weight, "weight")], base=f"{name}_scaled" if bias is not None else name)
    if bias is not None:
        y = nz.pw("add", [y, channel(bias, "bias")], base=name)
    return y


def _m_instancenorm(nz, n, module, path, args, kwargs, result):
    """InstanceNorm1d/2d/3d. With batch statistics (track_running_stats=False, or in training mode)
    it is GroupNorm with one group per channel; in eval mode with running statistics it is the
    elementwise batch-norm formula."""
    x = args[0]
    if len(nz.shape(x)) == module._get_no_batch_dim():
        raise unsupported(f"{type(module).__name__} of an unbatched input")
    weight, bias = _affine_params(nz, module, path)
    if module.track_running_stats and not module.training:
        return _running_stats_norm(nz, n.name, x, nz.param(f"{path}.running_mean"),
                                   nz.param(f"{path}.running_var"), weight, bias, float(module.eps))
    if module.track_running_stats:
        raise unsupported(f"{type(module).__name__} updating its running statistics (training mode)")
    return _instance_stats_norm(nz, n.name, x, weight, bias, float(module.eps), result)


def _instance_stats_norm(nz: _Normalizer, name: str, x: Ref, weight: Ref | None, bias: Ref | None,
                         eps: float, result: Any) -> Ref:
    """Instance norm with each sample's per-channel statistics: a GroupNorm whose group count is the
    input's channel count, read at run time (an InstanceNorm's num_features need not match it when
    it has no affine weights: KernelBench level 2's 28_BMM_InstanceNorm normalizes a (B, 1, 1, F)
    tensor with num_features=F)."""
    if len(nz.shape(x)) < 3:
        raise unsupported(f"{name}: instance norm of a {len(nz.shape(x))}-D input (no spatial dims)")
    channels = nz.py(f"{name}_channels", f"{x.name}.shape[1]", None, args=[x])
    b = {"input": x, "num_groups": channels, "weight": weight, "bias": bias, "eps": eps}
    return _h_rowwise(nz, name, "group_norm", b, result)



def _m_dropout(nz, n, module, path, args, kwargs, result):
    if module.training and module.p > 0:
        raise unsupported(f"{type(module).__name__}(p={module.p}) in training mode (random)")
    return args[0]


def _m_act(op: str, **attrs_of):
    def handler(nz, n, module, path, args, kwargs, result):
        attrs = {key: float(getattr(module, src)) if not isinstance(getattr(module, src), str)
                 else getattr(module, src) for key, src in attrs_of.items()}
        if op == "relu6":
            return _h_unary(nz, n.name, "relu6", {"input": args[0]}, result)
        if op in UNARY:
            return nz.add(n.name, "pw", op, [args[0]], like=result)
        return _h_pw(nz, n.name, op, {"input": args[0], **attrs}, result)
    return handler


def _m_identity(nz, n, module, path, args, kwargs, result):
    return args[0]


def _m_softmax(op: str):
    def handler(nz, n, module, path, args, kwargs, result):
        return _h_rowwise(nz, n.name, op, {"input": args[0], "dim": module.dim}, result)
    return handler


def _m_flatten(nz, n, module, path, args, kwargs, result):
    expr = f"{args[0].name}.flatten({module.start_dim}, {module.end_dim})"
    alias = args[0].name if _same_nonunit(nz.shape(args[0]), tuple(result.shape)) else None
    return nz.py(n.name, expr, result, alias_of=alias, args=[args[0]])


def _m_loss(op: str):
    def handler(nz, n, module, path, args, kwargs, result):
        b: dict[str, Any] = {"input": args[0], "target": args[1], "reduction": module.reduction}
        for attr in ("ignore_index", "label_smoothing", "beta", "delta", "log_target"):
            if hasattr(module, attr):
                b[attr] = getattr(module, attr)
        if getattr(module, "weight", None) is not None:
            raise unsupported(f"{type(module).__name__} with class weights")
        return _h_loss(nz, n.name, op, b, result)
    return handler


def _m_cosine(nz, n, module, path, args, kwargs, result):
    return _h_cosine(nz, n.name, "cosine_similarity",
                     {"x1": args[0], "x2": args[1], "dim": module.dim, "eps": module.eps}, result)


def _m_pool(nz, n, module, path, args, kwargs, result):
    return _pool_node(nz, n.name, pooling.from_module(module, path), args[0], result)


def _late(module: str, function: str) -> Callable[..., Any]:
    """A handler that lives in coders/template/<module>.py, which builds on this module: imported
    when first called."""
    def handler(*args: Any) -> Any:
        return getattr(importlib.import_module(f"coders.template.{module}"), function)(*args)
    return handler


_m_recurrent = _late("recurrent", "trace_module")  # LSTM, GRU, RNN
_m_transformer = _late("transformer", "trace_module")  # MultiheadAttention, TransformerEncoder(Layer)
_m_metric_loss = _late("metric_losses", "trace_module")  # PairwiseDistance, TripletMarginLoss
_reg("unfold", ["*"], ".unfold")
_reg("pairwise_distance", ["*"], F.pairwise_distance, torch.pairwise_distance)
_reg("triplet_margin_loss", ["*"], F.triplet_margin_loss)
_HANDLERS["unfold"] = _late("patches", "trace_unfold")
_HANDLERS["pairwise_distance"] = _HANDLERS["triplet_margin_loss"] = _late("metric_losses", "trace_function")


_MODULES: dict[type, Any] = {
    nn.Linear: _m_linear,
    nn.Conv1d: _m_conv, nn.Conv2d: _m_conv, nn.Conv3d: _m_conv,
    nn.ConvTranspose1d: _m_conv_transpose, nn.ConvTranspose2d: _m_conv_transpose,
    nn.ConvTranspose3d: _m_conv_transpose,
    nn.LayerNorm: _m_norm, nn.RMSNorm: _m_norm, nn.GroupNorm: _m_norm,
    nn.BatchNorm1d: _m_batchnorm, nn.BatchNorm2d: _m_batchnorm, nn.BatchNorm3d: _m_batchnorm,
    nn.InstanceNorm1d: _m_instancenorm, nn.InstanceNorm2d: _m_instancenorm,
    nn.InstanceNorm3d: _m_instancenorm,
    nn.ReLU: _m_act("relu"), nn.Sigmoid: _m_act("sigmoid"), nn.Tanh: _m_act("tanh"),
    nn.SiLU: _m_act("silu"), nn.Mish: _m_act("mish"), nn.Hardswish: _m_act("hardswish"),
    nn.Hardsigmoid: _m_act("hardsigmoid"), nn.SELU: _m_act("selu"), nn.ReLU6: _m_act("relu6"),
    nn.Softsign: _m_act("softsign"), nn.LogSigmoid: _m_act("logsigmoid"),
    nn.Tanhshrink: _m_act("tanhshrink"),
    nn.GELU: _m_act("gelu", approximate="approximate"),
    nn.LeakyReLU: _m_act("leaky_relu", negative_slope="negative_slope"),
    nn.ELU: _m_act("elu", alpha="alpha"), nn.CELU: _m_act("celu", alpha="alpha"),
    nn.Softplus: _m_act("softplus", beta="beta", threshold="threshold"),
    nn.Hardtanh: _m_act("hardtanh", min_val="min_val", max_val="max_val"),
    nn.Threshold: _m_act("threshold", threshold="threshold", value="value"),
    nn.Hardshrink: _m_act("hardshrink", lambd="lambd"),
    nn.Softshrink: _m_act("softshrink", lambd="lambd"),
    nn.Dropout: _m_dropout, nn.Dropout1d: _m_dropout, nn.Dropout2d: _m_dropout,
    nn.AlphaDropout: _m_dropout, nn.Identity: _m_identity,
    nn.Softmax: _m_softmax("softmax"), nn.LogSoftmax: _m_softmax("log_softmax"),
    nn.Flatten: _m_flatten,
    nn.CrossEntropyLoss: _m_loss("cross_entropy"), nn.NLLLoss: _m_loss("nll_loss"),
    nn.MSELoss: _m_loss("mse_loss"), nn.L1Loss: _m_loss("l1_loss"),
    nn.SmoothL1Loss: _m_loss("smooth_l1_loss"), nn.HuberLoss: _m_loss("huber_loss"),
    nn.KLDivLoss: _m_loss("kl_div"), nn.BCELoss: _m_loss("binary_cross_entropy"),
    nn.BCEWithLogitsLoss: _m_loss("binary_cross_entropy_with_logits"),
    nn.CosineSimilarity: _m_cosine,
    **{module: _m_pool for module in pooling.MODULES},
    nn.LSTM: _m_recurrent, nn.GRU: _m_recurrent, nn.RNN: _m_recurrent,
    nn.MultiheadAttention: _m_transformer, nn.TransformerEncoder: _m_transformer,
    nn.TransformerEncoderLayer: _m_transformer,
    nn.PairwiseDistance: _m_metric_loss, nn.TripletMarginLoss: _m_metric_loss,
}
