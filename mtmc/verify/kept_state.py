"""What a candidate keeps between forward calls: every tensor reachable from its model, its
module's globals and its own functions, classes and instances (the state check of child.py: a
result cache keyed on the inputs, S11, or state carried across calls, S10)."""

from __future__ import annotations

from typing import Any

import torch


def persistent_tensors(model: torch.nn.Module, module: Any) -> dict[str, torch.Tensor]:
    """Every tensor reachable from the model (parameters, buffers, attributes and the lists, tuples
    and dicts in them, submodules too), from the candidate module's globals, and from what the
    candidate's own code keeps elsewhere: class attributes, closures and default arguments of its
    functions and methods, attributes of instances of its classes. By path."""
    found: dict[str, torch.Tensor] = {}
    seen: set[int] = set()
    home = getattr(module, "__name__", None)

    def walk(value: Any, path: str, depth: int) -> None:
        if isinstance(value, torch.Tensor):
            found.setdefault(path, value)
            return
        if depth >= 8 or id(value) in seen:
            return
        seen.add(id(value))
        if isinstance(value, torch.nn.Module):
            for name, item in vars(value).items():
                if name in ("_parameters", "_buffers", "_modules"):
                    for key, sub in item.items():
                        walk(sub, f"{path}.{key}", depth + 1)
                elif not name.startswith("__"):
                    walk(item, f"{path}.{name}", depth + 1)
        elif isinstance(value, (list, tuple, set, frozenset)):
            for i, item in enumerate(value):
                walk(item, f"{path}[{i}]", depth + 1)
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(item, f"{path}[{key!r}]", depth + 1)
        elif getattr(value, "__module__", None) == home and not _triton_object(value):
            # the candidate's own functions, classes and instances (kernels are Triton's objects:
            # an autotuner keeps its last arguments, which is not the candidate's state)
            for name, item in _kept_by(value):
                walk(item, f"{path}.{name}", depth + 1)

    walk(model, "self", 0)
    for name, value in vars(module).items():
        if not name.startswith("__"):
            walk(value, name, 1)
    return found


def _triton_object(value: Any) -> bool:
    return type(value).__module__.split(".")[0] == "triton"


def _kept_by(value: Any) -> list[tuple[str, Any]]:
    """What a function, class or instance of the candidate's module keeps between calls."""
    if isinstance(value, type):
        return [(k, v) for k, v in vars(value).items() if not k.startswith("__")]
    function = getattr(value, "__func__", value)  # a method: its function
    if callable(function) and hasattr(function, "__code__"):
        cells = [(f"<closure {n}>", c.cell_contents) for n, c in
                 zip(function.__code__.co_freevars, function.__closure__ or (), strict=True)
                 if _filled(c)]
        defaults = [("<defaults>", function.__defaults__ or ()),
                    ("<kwdefaults>", function.__kwdefaults__ or {})]
        return cells + defaults
    state = getattr(value, "__dict__", None)
    return list(state.items()) if isinstance(state, dict) else []


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018  (an empty cell raises)
    except ValueError:
        return False
    return True
