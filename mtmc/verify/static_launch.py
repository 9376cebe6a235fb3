"""Static rules for the code Triton's launch machinery runs: kernel bodies, heuristics, hooks, grids.

Code that runs inside a launch is where a candidate can hide host compute: under the interpreter
a kernel body is plain Python, and `triton.heuristics` functions, autotune `Config` pre/post
hooks and grid functions run on the host in the middle of a launch. So:
- a kernel body may call only `tl.*`, other `@triton.jit` functions of the file and
  `@triton.constexpr_function` helpers, and read only its own names and module-level constants;
- heuristics, hooks and constexpr helpers are limited to integer arithmetic on the launch's
  meta-arguments: subscripts, shapes, `triton.cdiv`-style helpers, comparisons, and (for a hook) the
  one store the TMA pattern needs, `nargs["a_desc"].block_shape = [...]`;
- `prune_configs_by` callbacks are refused outright.
Grid functions are left to the runtime census (they call helpers such as an SM count query); the
census stays on while a grid function runs (proof.py).
"""

from __future__ import annotations

import ast
from collections.abc import Callable

# Python builtins a kernel body may call (Triton maps them to its own ops or constexpr math).
KERNEL_BUILTINS = frozenset({"range", "min", "max", "float", "int", "bool", "len", "print", "abs",
                             "isinstance", "tuple", "zip", "enumerate"})
# What a launch callback may call: integer helpers, and these methods on its arguments.
CALLBACK_FUNCTIONS = frozenset({"triton.cdiv", "triton.next_power_of_2", "math.ceil", "math.floor",
                                "math.log2", "math.prod", "min", "max", "int", "len", "abs", "bool"})
CALLBACK_METHODS = frozenset({"numel", "size", "stride", "dim", "element_size"})
CALLBACK_ATTRIBUTES = frozenset({"shape", "ndim", "dtype", "block_shape", "element_ty", "itemsize"})
JIT_DECORATORS = frozenset({"triton.jit", "triton.autotune", "triton.heuristics"})

Flag = Callable[[int, str, str], None]
Resolve = Callable[[ast.expr], "str | None"]


class LaunchRules:
    def __init__(self, tree: ast.Module, resolve: Resolve, flag: Flag) -> None:
        self.tree, self.resolve, self.flag = tree, resolve, flag
        self.defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        self.kernels = {name for name, fn in self.defs.items() if self._decorated(fn, JIT_DECORATORS)}
        self.helpers = {name for name, fn in self.defs.items()
                        if self._decorated(fn, {"triton.constexpr_function"})}
        self.lambdas: dict[str, list[ast.Lambda]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        self.lambdas.setdefault(target.id, []).append(node.value)
        self.constants = _module_constants(tree, resolve)

    def run(self) -> None:
        for name in sorted(self.kernels):
            self._check_kernel(self.defs[name])
        for name in sorted(self.helpers):
            self._check_callback(self.defs[name], f"constexpr helper `{name}`")
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call):
                self._check_launch_api(node)

    def _decorated(self, fn: ast.FunctionDef, names: set[str] | frozenset[str]) -> bool:
        return any(self.resolve(d.func if isinstance(d, ast.Call) else d) in names for d in fn.decorator_list)

    # --- kernel bodies -----------------------------------------------------------------------------
    def _check_kernel(self, fn: ast.FunctionDef) -> None:
        local = _bound_names(fn)
        allowed_names = local | self.kernels | self.helpers | KERNEL_BUILTINS | self.constants
        for stmt in fn.body:
            for node in ast.walk(stmt):
                if isinstance(node, ast.Call):
                    self._check_kernel_call(fn.name, node, local)
                elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) \
                        and node.id not in allowed_names and self.resolve(node) is None:
                    self.flag(node.lineno, "kernel", f"kernel `{fn.name}` reads module-level `{node.id}`: a "
                              "kernel reads only its arguments, its own names and constants")

    def _check_kernel_call(self, kernel: str, node: ast.Call, local: set[str]) -> None:
        func = node.func
        if isinstance(func, ast.Name):
            if func.id in KERNEL_BUILTINS or func.id in self.kernels or func.id in self.helpers:
                return
            name = func.id
        elif isinstance(func, ast.Attribute):
            dotted = self.resolve(func)
            if dotted is not None and dotted.startswith("triton.language"):
                return
            root = func
            while isinstance(root, ast.Attribute):
                root = root.value
            if dotted is None and not (isinstance(root, ast.Name) and root.id not in local):
                return  # a method of a kernel value (x.to(), acc.sum())
            name = dotted or ast.unparse(func)
        else:
            name = ast.unparse(func)
        self.flag(node.lineno, "kernel", f"kernel `{kernel}` calls `{name}`: a kernel may call only tl.*, "
                  "@triton.jit functions and @triton.constexpr_function helpers")

    # --- heuristics, hooks and grids ----------------------------------------------------------------
    def _check_launch_api(self, node: ast.Call) -> None:
        dotted = self.resolve(node.func)
        if dotted == "triton.heuristics":
            for arg in node.args:
                values = arg.values if isinstance(arg, ast.Dict) else [arg]
                for value in values:
                    self._check_reference(value, "a triton.heuristics function")
        elif dotted in ("triton.Config", "triton.autotune"):
            for kw in node.keywords:
                if kw.arg in ("pre_hook", "post_hook"):
                    self._check_reference(kw.value, f"a {dotted} {kw.arg}")
                elif kw.arg == "prune_configs_by":
                    self.flag(node.lineno, "hook", "autotune `prune_configs_by` runs candidate code inside "
                              "the launch: not allowed")

    def _check_reference(self, node: ast.expr, what: str) -> None:
        """A callback given inline (lambda) or by the name of a function or lambda of this file."""
        if isinstance(node, ast.Lambda):
            self._check_callback(node, what)
        elif isinstance(node, ast.Name) and (node.id in self.defs or node.id in self.lambdas):
            for target in [self.defs[node.id]] if node.id in self.defs else self.lambdas[node.id]:
                self._check_callback(target, what)
        elif isinstance(node, ast.Constant) and node.value is None:
            return
        else:
            self.flag(node.lineno, "hook", f"{what} must be a lambda or a function of this file")

    def _check_callback(self, fn: ast.Lambda | ast.FunctionDef, what: str) -> None:
        bad = _bad_expr(fn.body, self.resolve) if isinstance(fn, ast.Lambda) else \
            next(filter(None, (_bad_stmt(s, self.resolve) for s in fn.body)), None)
        if bad is not None:
            self.flag(bad.lineno, "hook", f"{what} may only do integer arithmetic on the launch's "
                      f"meta-arguments; `{ast.unparse(bad)[:60]}` is more (host compute inside a launch)")


def _bound_names(fn: ast.FunctionDef) -> set[str]:
    args = fn.args
    names = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
    return names


def _module_constants(tree: ast.Module, resolve: Resolve) -> set[str]:
    """Module-level names bound to literals or `tl.constexpr(...)`: values a kernel may read."""
    names = set()
    for node in tree.body:
        targets, value = [], None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        literal = isinstance(value, ast.Constant) or (
            isinstance(value, ast.UnaryOp) and isinstance(value.operand, ast.Constant)) or (
            isinstance(value, ast.Call) and resolve(value.func) == "triton.language.constexpr")
        if literal:
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def _bad_expr(node: ast.expr, resolve: Resolve) -> ast.expr | None:
    """The first sub-expression outside the integer-arithmetic grammar, or None."""
    if isinstance(node, ast.Constant | ast.Name):
        return None
    if isinstance(node, ast.Attribute):
        return node if node.attr not in CALLBACK_ATTRIBUTES else _bad_expr(node.value, resolve)
    if isinstance(node, ast.Call):
        dotted = resolve(node.func) or (node.func.id if isinstance(node.func, ast.Name) else None)
        func = node.func
        method = isinstance(func, ast.Attribute) and dotted is None and func.attr in CALLBACK_METHODS
        if dotted not in CALLBACK_FUNCTIONS and not method:
            return node
        parts = [*node.args, *(k.value for k in node.keywords)]
        parts += [node.func.value] if method else []
        return next(filter(None, (_bad_expr(p, resolve) for p in parts)), None)
    simple = (ast.Subscript, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Tuple,
              ast.List, ast.Slice)
    if isinstance(node, simple):
        children = [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)]
        return next(filter(None, (_bad_expr(c, resolve) for c in children)), None)
    return node


def _bad_stmt(stmt: ast.stmt, resolve: Resolve) -> ast.AST | None:
    """Statements of a hook function: docstring, if, return, pass, and stores to `.block_shape`."""
    if isinstance(stmt, ast.Pass):
        return None
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
        return None
    if isinstance(stmt, ast.Return):
        return _bad_expr(stmt.value, resolve) if stmt.value is not None else None
    if isinstance(stmt, ast.If):
        inner = [_bad_expr(stmt.test, resolve), *(_bad_stmt(s, resolve) for s in stmt.body + stmt.orelse)]
        return next(filter(None, inner), None)
    if isinstance(stmt, ast.Assign) and all(_is_block_shape(t) for t in stmt.targets):
        inner = [_bad_expr(t.value, resolve) for t in stmt.targets] + [_bad_expr(stmt.value, resolve)]
        return next(filter(None, inner), None)
    return stmt


def _is_block_shape(target: ast.expr) -> bool:
    return isinstance(target, ast.Attribute) and target.attr == "block_shape"
