"""Whether the sizes a trace pinned (trace/concrete.py) hold wherever the task is checked.

A pinned program refuses other sizes, so it is worth writing only when every size the verifier
checks it at gives the pinned dims their traced values: the task's size sets on each device and, for
a device with one, the derived size the verifier adds (mtmc/verify/protocol.py: each constant that
only `get_inputs` reads changes; one that `get_init_inputs` also reads is the model's, so fixed). A
size at which the reference itself fails is not checked (Swin's patch embedding asserts its image
size), so it does not count.
"""

from __future__ import annotations

import random
from typing import Any

import torch

from coders.template.trace.graph import Graph, unsupported
from mtmc.tasks import Task
from mtmc.tasks.task import needs_real_values, on_meta


def check_pins(task: Task, graph: Graph) -> None:
    """Raise (unsupported) when a size the task is checked at moves a pinned dim."""
    if not graph.pins:
        return
    traced = [graph.node(name).shape for name in graph.inputs]
    for sizes in checked_sizes(task):
        shapes = _input_shapes(task, sizes)
        moved = [(name, dim) for name, dim in graph.pins
                 if _read(shapes, graph.inputs, name, dim) != _read(traced, graph.inputs, name, dim)]
        if moved and _reference_runs(task, sizes):
            name, dim = moved[0]
            read = f"{name}.shape" + (f"[{dim}]" if dim is not None else "")
            raise unsupported(
                f"Python control flow of the forward reads {read} ({_read(traced, graph.inputs, name, dim)} "
                f"as traced, {_read(shapes, graph.inputs, name, dim)} at {sizes}, a size the task is "
                "checked at): a program traced at one size would refuse the other")


def checked_sizes(task: Task) -> list[dict[str, Any]]:
    """The size sets the verifier checks `task` at, on either device (the derived one drawn here)."""
    from mtmc.verify.protocol import derived_size  # the verifier's rule, imported where it is needed

    found: dict[str, dict[str, Any]] = {}
    for device in ("cpu", "cuda"):
        sets = task.sizes(device)
        if len(sets) == 1 and (derived := derived_size(task, sets[0], random.Random(0))):
            sets = sets + [derived]
        found.update({repr(sorted(s.items())): s for s in sets})
    return list(found.values())


def _input_shapes(task: Task, sizes: dict[str, Any]) -> list[tuple[int, ...] | None]:
    with torch.device("meta"):
        inputs = task.make_inputs(seed=0, sizes=sizes)
    return [tuple(x.shape) if isinstance(x, torch.Tensor) else None for x in inputs]


def _read(shapes: list, names: list[str], name: str, dim: int | None) -> Any:
    shape = shapes[names.index(name)]
    return tuple(shape) if dim is None or shape is None else shape[dim]


def _reference_runs(task: Task, sizes: dict[str, Any]) -> bool:
    """The reference runs at `sizes` (on meta tensors: shapes only)."""
    try:
        model = on_meta(lambda: task.make_model(seed=0, sizes=sizes))
        with torch.device("meta"):
            inputs = task.make_inputs(seed=0, sizes=sizes)
        with torch.no_grad():
            model(*inputs)
    except Exception as err:  # the reference refuses the size (an assert, a shape error): not checked
        return needs_real_values(err)  # unless it is the meta device that cannot run it: assume it runs
    return True
