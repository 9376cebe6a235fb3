"""Static checks: read the candidate's AST before anything runs and list what breaks the rules.

Each rule closes a known reward hack (docs/design.md, S1-S20, T1-T3) or a way to reach outside the sandbox.
The checks are a cheap first line with line numbers for the coder; the runtime checks (proof.py: launch
counter, aten op census, identity snapshots) are the ground truth behind them.

Names are resolved through the candidate's own imports (`import torch.nn.functional as F` makes `F.softmax`
mean `torch.nn.functional.softmax`) and then looked up on the real, trusted modules, so "is this torch
function compute or glue" is answered by what the object is, not by a list of spellings. Rules inside
`@triton.jit` functions are relaxed where Triton has its own meaning (`x.sum()` on a Triton block is kernel
code). The rule tables are static_rules.py's.
"""

from __future__ import annotations

import ast
import threading
import types

import torch

from mtmc.verify.policy import ALLOWED_IMPORTS, GLUE_TORCH_FUNCTIONS, NN_CONTAINERS, allowed_api
from mtmc.verify.static_launch import LaunchRules
from mtmc.verify.static_report import StaticReport, Violation
from mtmc.verify.static_rules import (
    ALLOWED_TRITON,
    COMPUTE_METHODS,
    FORBIDDEN_ATTRIBUTES,
    FORBIDDEN_BUILTINS,
    FORBIDDEN_FUNCTOOLS,
    FORBIDDEN_TORCH,
    TORCH_GLOBAL,
    forbidden_reach,
    is_self,
    lookup,
)

_PARSE_LOCK = threading.Lock()  # two verify_many threads parsing at once raised SystemError in CI


def check_source(source: str, library_ops: tuple[str, ...] | list[str] = ()) -> StaticReport:
    """All rule violations in `source`, in line order. Never raises for a bad candidate."""
    try:
        with _PARSE_LOCK:  # CPython 3.11's ast.parse is not thread-safe: python/cpython#106905
            tree = ast.parse(source)
    except SyntaxError as err:
        return StaticReport([Violation(err.lineno or 0, "syntax", f"syntax error: {err.msg}")])
    checker = _Checker(tree, tuple(library_ops))
    checker.run()
    violations = sorted(set(checker.violations), key=lambda v: (v.line, v.rule, v.message))
    return StaticReport(violations, uses_atomics=checker.uses_atomics)


class _Checker(ast.NodeVisitor):
    def __init__(self, tree: ast.Module, library_ops: tuple[str, ...]) -> None:
        self.tree = tree
        self.library_ops = library_ops
        self.library_api = allowed_api(library_ops)
        self.violations: list[Violation] = []
        self.aliases: dict[str, str] = {}  # local name -> dotted path it was imported as
        self.classes: dict[str, ast.ClassDef] = {}
        self.uses_atomics = False
        self._in_kernel = 0  # depth inside @triton.jit functions
        self._layers: dict[str, str] = {}  # self.<attr> -> nn layer class name, per class
        self._method = ""  # name of the method being visited
        self._params: list[set[str]] = []  # parameter names of the enclosing functions
        self._attr_bases: set[int] = set()  # ids of nodes that are the `.value` of an Attribute
        self._call_funcs: set[int] = set()  # ids of nodes that are the `.func` of a Call

    # --- driver ------------------------------------------------------------------------------------
    def run(self) -> None:
        for node in ast.walk(self.tree):  # imports first: aliases apply to the whole file
            if isinstance(node, ast.Import | ast.ImportFrom):
                self._record_import(node)
            elif isinstance(node, ast.Attribute):
                self._attr_bases.add(id(node.value))
            elif isinstance(node, ast.Call):
                self._call_funcs.add(id(node.func))
        for node in self.tree.body:
            if isinstance(node, ast.ClassDef):
                self.classes[node.name] = node
        if "ModelNew" not in self.classes:
            self._flag(1, "class", "no top-level `class ModelNew(nn.Module)` defined")
        elif self._derives_from_model("ModelNew", set()):
            self._flag(self.classes["ModelNew"].lineno, "class",
                       "ModelNew subclasses the reference Model (its forward would run the reference, S5)")
        self.visit(self.tree)
        LaunchRules(self.tree, self._resolve, self._flag).run()

    def _flag(self, line: int, rule: str, message: str) -> None:
        self.violations.append(Violation(line, rule, message))

    # --- imports -----------------------------------------------------------------------------------
    def _record_import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name not in ALLOWED_IMPORTS:
                    self._flag(node.lineno, "import", f"import of `{alias.name}` is not allowed "
                               f"(allowed: {', '.join(sorted(ALLOWED_IMPORTS))})")
                if alias.asname:
                    self.aliases[alias.asname] = alias.name
                else:
                    root = alias.name.split(".")[0]
                    self.aliases[root] = root
            return
        module = node.module or ""
        if node.level:
            self._flag(node.lineno, "import", "relative imports are not allowed")
            return
        if module not in ALLOWED_IMPORTS:
            self._flag(node.lineno, "import", f"import from `{module}` is not allowed")
            return
        for alias in node.names:
            if alias.name == "*":
                self._flag(node.lineno, "import", f"`from {module} import *` hides what is used")
                continue
            full = f"{module}.{alias.name}"
            self.aliases[alias.asname or alias.name] = full
            if full not in ALLOWED_IMPORTS:
                self._check_dotted(full, node.lineno)

    def visit_Import(self, node: ast.Import) -> None:
        pass  # checked in _record_import

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        pass

    # --- statements that have no place in a kernel module -------------------------------------------
    def visit_Try(self, node: ast.AST) -> None:
        self._flag(node.lineno, "try", "try/except is not allowed: a fallback path hides failures (S4)")
        self.generic_visit(node)

    visit_TryStar = visit_Try

    def visit_Global(self, node: ast.Global | ast.Nonlocal) -> None:
        self._flag(node.lineno, "state", "global/nonlocal state carries results across calls (S10/S11)")

    visit_Nonlocal = visit_Global

    def visit_AsyncFunctionDef(self, node: ast.AST) -> None:
        self._flag(node.lineno, "async", "async code can run work outside the timed call (T2)")
        self.generic_visit(node)

    visit_Await = visit_AsyncFor = visit_AsyncWith = visit_AsyncFunctionDef

    # --- definitions -------------------------------------------------------------------------------
    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for base in node.bases:
            self._check_base(node, base)
        for kw in node.keywords:
            self._flag(node.lineno, "class", f"class keyword `{kw.arg}=` (metaclasses) is not allowed")
        saved = self._layers
        self._layers = self._layer_attributes(node)
        self.generic_visit(node)
        self._layers = saved

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if node.name.startswith("__") and node.name.endswith("__") and node.name != "__init__":
            self._flag(node.lineno, "dunder", f"defining `{node.name}` is not allowed (operator, "
                       "dispatch and lifetime hooks can fake outputs or defer work, S13/S19)")
        kernel = any(self._is_triton_jit(d) for d in node.decorator_list)
        for deco in node.decorator_list:
            self.visit(deco)
        saved = self._method
        self._method = node.name if not kernel else self._method
        self._in_kernel += kernel
        args = node.args
        self._params.append({a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs,
                                             *filter(None, [args.vararg, args.kwarg])]})
        for item in [node.args, *node.body, *([node.returns] if node.returns else [])]:
            self.visit(item)
        self._params.pop()
        self._in_kernel -= kernel
        self._method = saved

    def _is_triton_jit(self, deco: ast.expr) -> bool:
        target = deco.func if isinstance(deco, ast.Call) else deco
        return self._resolve(target) in {"triton.jit", "triton.autotune", "triton.heuristics"}

    def _check_base(self, node: ast.ClassDef, base: ast.expr) -> None:
        if isinstance(base, ast.Name) and base.id in self.classes:
            return  # a class of this file: its own bases are checked where it is defined
        dotted = self._resolve(base)
        obj = lookup(dotted) if dotted else None
        if isinstance(obj, type) and issubclass(obj, torch.Tensor):
            self._flag(node.lineno, "class", f"`{node.name}` subclasses {dotted}: tensor subclasses can "
                       "fake or defer outputs (S13)")
        elif isinstance(obj, type) and issubclass(obj, torch.nn.Module) and obj.__name__ not in NN_CONTAINERS:
            self._flag(node.lineno, "class", f"`{node.name}` inherits {dotted}: its forward is PyTorch "
                       "compute (S1)")
        elif dotted is None and isinstance(base, ast.Name) and base.id == "Model":
            self._flag(node.lineno, "class", f"`{node.name}` subclasses the reference Model (S5)")

    def _derives_from_model(self, name: str, seen: set[str]) -> bool:
        if name == "Model":
            return True
        if name in seen or name not in self.classes:
            return False
        seen.add(name)
        return any(isinstance(b, ast.Name) and self._derives_from_model(b.id, seen)
                   for b in self.classes[name].bases)

    def _layer_attributes(self, node: ast.ClassDef) -> dict[str, str]:
        """`self.x = nn.Linear(...)` anywhere in the class: x holds a vendor layer."""
        layers = {}
        for sub in ast.walk(node):
            if not (isinstance(sub, ast.Assign) and isinstance(sub.value, ast.Call)):
                continue
            obj = lookup(self._resolve(sub.value.func) or "")
            is_module = isinstance(obj, type) and issubclass(obj, torch.nn.Module)
            if not is_module or obj.__name__ in NN_CONTAINERS:
                continue
            for target in sub.targets:
                if isinstance(target, ast.Attribute) and is_self(target.value):
                    layers[target.attr] = obj.__name__
        return layers

    # --- expressions -------------------------------------------------------------------------------
    def visit_Name(self, node: ast.Name) -> None:
        name = node.id
        if name in self.aliases:
            self._check_dotted(self.aliases[name], node.lineno, id(node) in self._call_funcs)
            self._check_used_as_value(node, self.aliases[name])
        elif name in FORBIDDEN_BUILTINS and not any(name in params for params in self._params):
            self._flag(node.lineno, "builtin", f"`{name}`: {FORBIDDEN_BUILTINS[name]}")
        elif name.startswith("__") and name.endswith("__") and name != "__name__":
            self._flag(node.lineno, "dunder", f"`{name}` reaches interpreter internals")

    def visit_Attribute(self, node: ast.Attribute) -> None:
        dotted = self._resolve(node)
        if dotted is not None:  # a chain rooted at an import: judge the whole path once
            self._check_dotted(dotted, node.lineno, id(node) in self._call_funcs)
            self._check_used_as_value(node, dotted)
            return
        self._check_attribute_name(node)
        self.generic_visit(node)

    def _check_attribute_name(self, node: ast.Attribute) -> None:
        attr, line = node.attr, node.lineno
        if attr.startswith("__") and attr.endswith("__"):
            if attr != "__init__":
                self._flag(line, "dunder", f"`.{attr}` reaches interpreter internals")
        elif attr.startswith("_") and not is_self(node.value):
            self._flag(line, "private", f"`.{attr}`: private attributes of other objects are off limits")
        if attr in FORBIDDEN_ATTRIBUTES:
            self._flag(line, "attribute", f"`.{attr}`: {FORBIDDEN_ATTRIBUTES[attr]}")
        if attr.startswith("atomic_"):
            self.uses_atomics = True

    def _check_used_as_value(self, node: ast.expr, dotted: str) -> None:
        """A module may only be used through its attributes: `t = torch; t.matmul(...)`, `f(torch)`
        or `[torch][0]` would hide from these checks which function is finally called."""
        if id(node) in self._attr_bases:
            return
        if isinstance(lookup(dotted), types.ModuleType):
            self._flag(node.lineno, "alias", f"`{dotted}` used as a value: aliases of a module hide which "
                       "function is called; use it through its attributes")

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "type" and len(node.args) > 1:
            self._flag(node.lineno, "class", "type() with bases builds a class the checker never saw (S13)")
        if (isinstance(func, ast.Attribute) and not self._in_kernel and not is_self(func.value)
                and self._method != "__init__" and self._resolve(func) is None):
            method = func.attr.rstrip("_")
            if method in COMPUTE_METHODS and method not in self.library_api:
                self._flag(node.lineno, "library", f"`.{func.attr}()` is PyTorch compute outside a "
                           f"Triton kernel (S1){self._library_hint()}")
        if (self._method and self._method != "__init__" and isinstance(func, ast.Attribute)):
            holder = func.value if func.attr == "forward" else func
            if isinstance(holder, ast.Attribute) and is_self(holder.value) and holder.attr in self._layers:
                layer = self._layers[holder.attr]
                if layer not in self.library_api:
                    self._flag(node.lineno, "library", f"calls nn.{layer} (self.{holder.attr}) in "
                               f"`{self._method}`: vendor compute (S1){self._library_hint()}")
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.MatMult) and "@" not in self.library_api and not self._in_kernel \
                and self._method != "__init__":
            self._flag(node.lineno, "library", f"`@` is a vendor matmul (S1){self._library_hint()}")
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.op, ast.MatMult) and "@" not in self.library_api and not self._in_kernel:
            self._flag(node.lineno, "library", f"`@=` is a vendor matmul (S1){self._library_hint()}")
        self._check_store_target(node.target)
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self._check_store_target(target)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._check_store_target(node.target)
        self.generic_visit(node)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._check_store_target(target)
        self.generic_visit(node)

    def _check_store_target(self, target: ast.expr) -> None:
        """Writing to an attribute or item of an imported module is monkey-patching (T3, S16)."""
        if isinstance(target, ast.Tuple | ast.List):
            for elt in target.elts:
                self._check_store_target(elt)
            return
        if not isinstance(target, ast.Attribute | ast.Subscript):
            return
        root = target
        while isinstance(root, ast.Attribute | ast.Subscript):
            root = root.value
        if isinstance(root, ast.Name) and root.id in self.aliases:
            self._flag(target.lineno, "patch", f"assigns into imported `{self.aliases[root.id]}` "
                       "(monkey-patching, T3)")

    # --- name resolution and the torch/triton rules --------------------------------------------------
    def _resolve(self, node: ast.expr) -> str | None:
        """`F.softmax` -> 'torch.nn.functional.softmax' when the chain is rooted at an import."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not (isinstance(node, ast.Name) and node.id in self.aliases):
            return None
        return ".".join([self.aliases[node.id], *reversed(parts)])

    def _check_dotted(self, dotted: str, line: int, called: bool = True) -> None:
        parts = dotted.split(".")
        root = parts[0]
        if any(p.startswith("_") for p in parts[1:]):
            self._flag(line, root, f"`{dotted}`: private internals are off limits (S1/S16)")
            return
        reached = forbidden_reach(dotted)
        if reached:
            self._flag(line, "module", f"`{dotted}` reaches module `{reached}`, which a candidate may not "
                       "use (only torch, triton and pure-Python helpers are allowed)")
            return
        if root == "torch":
            self._check_torch(dotted, line, called)
        elif root == "triton":
            self._check_triton(dotted, parts, line)
        elif root == "functools" and len(parts) > 1 and parts[1] in FORBIDDEN_FUNCTOOLS:
            self._flag(line, "functools", f"`{dotted}`: {FORBIDDEN_FUNCTOOLS[parts[1]]}")

    def _check_torch(self, dotted: str, line: int, called: bool) -> None:
        for prefix, why in FORBIDDEN_TORCH.items():
            if dotted == prefix or dotted.startswith(prefix + "."):
                self._flag(line, "torch", f"`{dotted}`: {why}")
                return
        leaf = dotted.rsplit(".", 1)[-1]
        if leaf.startswith("set_"):
            self._flag(line, "torch", f"`{dotted}`: {TORCH_GLOBAL}")
            return
        obj = lookup(dotted)
        if self._method == "__init__" and called:
            return  # __init__ builds parameters (randn, weight transforms); only forward must be Triton
        if obj is None or isinstance(obj, type) or not callable(obj):
            return  # modules, classes (parameter holders), dtypes; unknown names fail at import
        if leaf in GLUE_TORCH_FUNCTIONS or leaf in self.library_api:
            return
        self._flag(line, "library", f"`{dotted}` is PyTorch compute: write it in Triton "
                   f"(S1){self._library_hint()}")

    def _check_triton(self, dotted: str, parts: list[str], line: int) -> None:
        if len(parts) > 1 and parts[1] not in ALLOWED_TRITON:
            self._flag(line, "triton", f"`{dotted}`: Triton internals (runtime, compiler, knobs, "
                       "testing) are the harness's, not the candidate's")
        elif parts[1:2] == ["tools"] and parts[2:3] not in ([], ["tensor_descriptor"]):
            self._flag(line, "triton", f"`{dotted}`: only triton.tools.tensor_descriptor is allowed")
        if parts[-1].startswith("atomic_"):
            self.uses_atomics = True

    def _library_hint(self) -> str:
        names = ", ".join(sorted(self.library_ops))
        return f"; this task allows only: {names}" if names else "; this task allows no vendor library calls"
