"""ModelNew's constructor: the reference's own `__init__` (and what it needs: the task's module
constants, helper module classes reduced to their constructors, the methods it calls), so parameters
have the same names, shapes and creation order: seeded weights match and
`load_state_dict(reference.state_dict())` works. Also the forward's parameters and their defaults."""

from __future__ import annotations

import ast
import builtins
import io
import re
import textwrap
import tokenize

from coders.template.trace import unsupported
from mtmc.tasks import Task

_KNOWN = {"torch", "nn", "F", "math", "self", "super"} | set(dir(builtins))


def constructor(task: Task) -> tuple[str, str]:
    """(`__init__` of Model as ModelNew's, module-level code it needs: constants, helper classes)."""
    tree = ast.parse(task.source)
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    model = classes.get("Model")
    if model is None:
        raise unsupported("a task without a `class Model`")
    init = next((f for f in model.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None)
    if init is None:
        init_text = "def __init__(self):\n    super().__init__()\n"
    else:
        init_text = _segment(task.source, init)
        init_text = re.sub(r"super\(\s*Model\s*,", "super(ModelNew,", init_text)
    # what the constructor may also use: class attributes (ResNet's `expansion`) first, methods
    # other than the forward (`self._make_layer(...)`) after it
    attributes = [n for n in model.body if isinstance(n, ast.Assign | ast.AnnAssign)]
    methods = _methods_called(init, [n for n in model.body if isinstance(n, ast.FunctionDef)
                                     and n.name not in ("__init__", "forward")])
    if attributes or methods:
        parts = [_segment(task.source, n) for n in attributes] + [init_text] + \
            [re.sub(r"super\(\s*Model\s*,", "super(ModelNew,", _segment(task.source, n)) for n in methods]
        init_text = "\n".join(part.rstrip() + "\n" for part in parts)
    constants = _module_constants(tree, task.source)
    aliases = _module_aliases(tree)
    prelude: list[tuple[int, str]] = []  # (line in the task's source, text): emitted in the source's order
    done: set[str] = set()
    # `Model` itself is rewritten (super(Model, self) -> super(ModelNew, self)), never copied.
    todo = _free_names(init) - {"Model"} if init is not None else set()
    for member in attributes + methods:
        todo |= _free_names(member) - {"Model"}
    while todo:
        name = todo.pop()
        if name in done or name in _KNOWN:
            continue
        done.add(name)
        if name in constants:
            node, text = constants[name]
            prelude.append((node.lineno, text))
            todo |= _free_names(node)
        elif name in aliases:  # `import torch as th`: renamed below (the verifier refuses `th = torch`)
            continue
        elif name in classes and name != "Model":
            text, needs = _helper_class(classes[name], task.source)
            prelude.append((classes[name].lineno, text))
            todo |= needs
        else:
            raise unsupported(f"Model.__init__ uses `{name}`, which the template coder cannot copy")
    used = {k: v for k, v in aliases.items() if k in done}
    # the task's own order, not the set's (which follows PYTHONHASHSEED): the same task gives the same
    # program in every process, and a base class or constant stands before its first use, as in the task
    return _rename(init_text, used), _rename("\n\n".join(text for _, text in sorted(prelude)), used)


def _methods_called(init: ast.FunctionDef | None, methods: list[ast.FunctionDef]) -> list[ast.FunctionDef]:
    """The methods the constructor reaches through `self.<name>`: the forward's helpers (Mamba2's
    segsum, PyTorch compute the static rules refuse) are traced into kernels, not copied."""
    by_name = {m.name: m for m in methods}
    reached: set[str] = set()
    todo = [init] if init is not None else []
    while todo:
        for node in ast.walk(todo.pop()):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                    node.value.id == "self" and node.attr in by_name and node.attr not in reached:
                reached.add(node.attr)
                todo.append(by_name[node.attr])
    return [m for m in methods if m.name in reached]


def forward_defaults(task: Task) -> dict[str, str]:
    """Model.forward's parameters in order, each with `=<literal>` where it has a constant default
    (`mask=None`: the trace took the default's path, and a caller may leave the argument out, as
    get_inputs does), else ''."""
    tree = ast.parse(task.source)
    model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    forward = next((f for f in getattr(model, "body", []) if isinstance(f, ast.FunctionDef) and
                    f.name == "forward"), None)
    if forward is None:
        return {}
    params = (forward.args.posonlyargs + forward.args.args)[1:]  # after self
    defaults = [None] * (len(params) - len(forward.args.defaults)) + list(forward.args.defaults)
    return {a.arg: f"={ast.unparse(d)}" if isinstance(d, ast.Constant) else ""
            for a, d in zip(params, defaults, strict=True)}


def _segment(source: str, node: ast.AST) -> str:
    """A node's source, dedented (the first line's indent is not part of the segment)."""
    text = ast.get_source_segment(source, node, padded=True)
    return textwrap.dedent(text)


def _module_constants(tree: ast.Module, source: str) -> dict[str, tuple[ast.AST, str]]:
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = (node, ast.get_source_segment(source, node))
    return out


# modules the program imports itself (emit/module.py generate), by the name it gives them
_IMPORTED = {"torch": "torch", "torch.nn": "nn", "torch.nn.functional": "F", "math": "math"}


def _rename(text: str, names: dict[str, str]) -> str:
    """`text` with each name token in `names` replaced (strings and comments left alone)."""
    if not names or not text:
        return text
    lines = text.splitlines(keepends=True)
    hits = [t for t in tokenize.generate_tokens(io.StringIO(text).readline)
            if t.type == tokenize.NAME and t.string in names]
    for t in reversed(hits):  # right to left: earlier columns stay valid
        row, (start, end) = t.start[0] - 1, (t.start[1], t.end[1])
        lines[row] = lines[row][:start] + names[t.string] + lines[row][end:]
    return "".join(lines)


def _module_aliases(tree: ast.Module) -> dict[str, str]:
    """Other names the task gives those modules (`import torch as th`): name -> the program's."""
    return {a.asname: _IMPORTED[a.name] for node in tree.body if isinstance(node, ast.Import)
            for a in node.names if a.asname and a.name in _IMPORTED and a.asname != _IMPORTED[a.name]}


def _free_names(node: ast.AST) -> set[str]:
    """Global names a function (or expression) reads. A function defined inside it (a builder
    such as MobileNet's `conv_dw(inp, oup, stride)`) has its own scope: its parameters are not
    free, and what it reads is free unless the outer scope binds it."""
    bound: set[str] = set()
    loads: set[str] = set()
    scope: list[ast.AST] = [node]
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        args = node.args
        bound |= {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
        bound |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
        # what the signature reads (defaults, annotations, decorators) counts as read here
        scope = [child for child in ast.iter_child_nodes(node)]

    def visit(sub: ast.AST) -> None:
        if sub is not node and isinstance(sub, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            if not isinstance(sub, ast.Lambda):
                bound.add(sub.name)
            loads.update(_free_names(sub))
            return
        if isinstance(sub, ast.Name):
            (bound if isinstance(sub.ctx, ast.Store) else loads).add(sub.id)
        elif isinstance(sub, ast.comprehension):
            bound.update(n.id for n in ast.walk(sub.target) if isinstance(n, ast.Name))
        for child in ast.iter_child_nodes(sub):
            visit(child)

    for child in scope:
        visit(child)
    return loads - bound


def _helper_class(cls: ast.ClassDef, source: str) -> tuple[str, set[str]]:
    """A task's helper module class without its forward (traced into the kernels); its other
    methods stay, the constructor may call them (DenseNet's `_make_layer`)."""
    keep = [n for n in cls.body if not (isinstance(n, ast.FunctionDef) and n.name == "forward")
            and not (isinstance(n, ast.Expr) and isinstance(getattr(n, "value", None), ast.Constant))]
    bases = ", ".join(ast.get_source_segment(source, b) for b in cls.bases)
    lines = [f"class {cls.name}({bases}):"]
    needs: set[str] = set()
    for node in keep or [ast.Pass()]:
        text = _segment(source, node) if not isinstance(node, ast.Pass) else "pass"
        lines.append(textwrap.indent(text, "    "))
        needs |= _free_names(node)
    needs |= {n.id for b in cls.bases for n in ast.walk(b) if isinstance(n, ast.Name)}
    return "\n".join(lines) + "\n", needs - {cls.name}
