"""What a candidate keeps between forward calls: every tensor reachable from its model, its
module's globals and its own functions, classes and instances (the state check of child.py: a
result cache keyed on the inputs, S11, or state carried across calls, S10).

Each kept tensor is judged by its whole storage, and a kept storage as the tensor of its bytes
(verifier 2.11): a view holds every byte of the memory it views into, which `as_strided` (glue a
candidate may call) reaches from a one-element slice, so a cache kept as a small constant view of a
big buffer, or as the buffer's `UntypedStorage`, showed no change before. Objects of Python's
own containers that are not lists, tuples, sets or dicts (a `functools.partial`, an `itertools`
iterator, a slice, a bound method) are walked through what they refer to. A kept Python number
that looks like a memory address is reported as it is (`address_like`)."""

from __future__ import annotations

import gc
import types
from collections.abc import Callable
from typing import Any

import torch

# Python ints in [2^40, 2^48): user-space addresses on x86-64 and aarch64, CUDA's unified addresses
# too. No size, count or constant an honest forward keeps comes near: 2^40 bytes is 1 TiB.
ADDRESS_RANGE = (1 << 40, 1 << 48)
ADDRESS = "a raw memory address"  # the state check's record of one (child.py reports it as such)
# The modules of holder types walked through gc.get_referents: Python's own objects that keep
# references (partial, repeat, cycle, iterators, slices, methods), and what an allowed import makes.
HOLDER_MODULES = frozenset({"builtins", "functools", "itertools", "collections", "types"})
NOT_HOLDERS = (type, types.ModuleType, types.FunctionType, types.CodeType, str, bytes, int, float)


def persistent_tensors(model: torch.nn.Module, module: Any) -> dict[str, Any]:
    """Every tensor reachable from the model (parameters, buffers, attributes and the lists, tuples
    and dicts in them, submodules too), from the candidate module's globals, and from what the
    candidate's own code keeps elsewhere: class attributes, closures and default arguments of its
    functions and methods, attributes of instances of its classes, what Python's own objects it
    keeps refer to. By path; a kept storage as a byte tensor over it, an address-like number as
    itself."""
    found: dict[str, Any] = {}
    seen: set[int] = set()
    home = getattr(module, "__name__", None)

    def walk(value: Any, path: str, depth: int) -> None:
        if isinstance(value, torch.Tensor):
            found.setdefault(path, value)
            return
        if isinstance(value, (torch.UntypedStorage, torch.TypedStorage)):
            found.setdefault(path, storage_bytes(value))
            return
        if address_like(value):
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
        elif _holder(value):
            for name, item in _held_by(value):
                walk(item, f"{path}.{name}", depth + 1)
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


def address_like(value: Any) -> bool:
    """An int (or an integral float: float64 holds 2^48 exactly) in ADDRESS_RANGE."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    return ADDRESS_RANGE[0] <= value < ADDRESS_RANGE[1] and value == int(value)


def storage_bytes(storage: torch.UntypedStorage | torch.TypedStorage) -> torch.Tensor:
    """A uint8 tensor over every byte of `storage` (no copy)."""
    if isinstance(storage, torch.TypedStorage):
        storage = storage.untyped()
    return torch.empty(0, dtype=torch.uint8, device=storage.device).set_(storage)


def digests(kept: dict[str, Any], digest: Callable[[torch.Tensor], Any]) -> dict[str, Any]:
    """Each kept tensor's digest of its whole storage (each storage digested once), an address
    as ADDRESS. A tensor without one (sparse, say) is digested as it is."""
    by_storage: dict[tuple[str, int, int], Any] = {}
    out: dict[str, Any] = {}
    for path, value in kept.items():
        if not isinstance(value, torch.Tensor):
            out[path] = ADDRESS
            continue
        try:
            storage = value.untyped_storage()
        except (RuntimeError, NotImplementedError):
            out[path] = digest(value)
            continue
        key = (str(storage.device), storage.data_ptr(), storage.nbytes())
        if key not in by_storage:
            by_storage[key] = digest(storage_bytes(storage))
        out[path] = by_storage[key]
    return out


def changes(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """The paths kept before or after but not both, whose digests differ, and kept addresses."""
    changed = sorted(set(before) ^ set(after))
    changed += sorted(p for p in set(before) & set(after) if before[p] != after[p])
    addresses = sorted(p for p in set(before) | set(after) if ADDRESS in (before.get(p), after.get(p)))
    return changed + [f"{p} ({ADDRESS})" for p in addresses if p not in changed]


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


def _holder(value: Any) -> bool:
    """An object of Python's own holder types: not a function, class or module (functions are the
    candidate's, walked by `_kept_by`, or other code's, whose globals are not the candidate's)."""
    return type(value).__module__ in HOLDER_MODULES and not isinstance(value, NOT_HOLDERS)


def _held_by(value: Any) -> list[tuple[str, Any]]:
    """What a holder refers to (a partial's arguments, a repeat's object, an iterator's sequence, a
    method's instance and function, a generator's locals)."""
    if isinstance(value, types.BuiltinFunctionType):  # a bound builtin method (`cache.add_`): its object
        owner = getattr(value, "__self__", None)
        return [] if owner is None or isinstance(owner, (types.ModuleType, type)) else [("<self>", owner)]
    if isinstance(value, types.FrameType):  # a suspended generator's frame: its locals only
        return [("<locals>", value.f_locals)]
    return [(f"<{i}>", item) for i, item in enumerate(gc.get_referents(value))]


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018  (an empty cell raises)
    except ValueError:
        return False
    return True
