"""A task: one KernelBench-format file (`Model`, `get_inputs`, `get_init_inputs`).

Built-in tasks may also define a module-level `MTMC` dict of metadata (all keys optional):

    MTMC = {
        "split": "train" | "eval",        # planners train only on "train"
        "cpu_sizes": [{"dim": 257}, ...],  # module-constant overrides for the CPU interpreter;
                                          # the first is the primary size, the rest extra shapes
        "gpu_sizes": [{"dim": 4093}],      # extra (odd) shapes checked on the GPU after the file's own
        "library": ["conv2d"],            # vendor-library ops a candidate may call (fused around)
        "precision": ["tf32"],            # reduced precisions a candidate may use
        "atol": 1e-4, "rtol": 1e-4,       # tolerance overrides (defaults are per dtype)
        "mode": "train" | "eval",          # the module mode the task is judged in (below)
    }

Mode: a task's modules run in the mode their constructor leaves them in, as KernelBench's own harness
runs them (it never calls `.eval()` or `.train()`): PyTorch builds a module in training mode, so
BatchNorm normalizes by the batch's statistics unless the constructor calls `self.eval()`.
MTMC["mode"] ("train" or "eval") overrides that; a task written for inference (BatchNorm with its
running statistics) says "eval". The candidate's ModelNew gets the same treatment. Dropout layers are
off in every mode: a random output cannot be compared with a reference, so dropout is judged as the
identity it is at p = 0 (KernelBench's harness instead seeds both runs alike, which only a candidate
calling PyTorch's own dropout can match).

Sizes are overrides of the module's constants (`batch_size = 4096`): `get_inputs()` reads them at
call time, so a task is re-instantiated at another size by loading its source into a fresh module
and assigning the overrides. External KernelBench files have no `MTMC` and run as written.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

MODES = ("train", "eval")
DROPOUTS = (torch.nn.Dropout, torch.nn.Dropout1d, torch.nn.Dropout2d, torch.nn.Dropout3d,
            torch.nn.AlphaDropout, torch.nn.FeatureAlphaDropout)


class TaskError(ValueError):
    """A task file that cannot be used; the message names the file and the problem."""


Sizes = dict[str, Any]


@dataclass
class Task:
    name: str
    source: str
    path: str | None = None
    _modules: dict[str, types.ModuleType] = field(default_factory=dict, repr=False, compare=False)

    # --- pickling: workers get the source, never a live module -----------------------------------
    def __getstate__(self) -> dict[str, Any]:
        return {"name": self.name, "source": self.source, "path": self.path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)

    # --- metadata ---------------------------------------------------------------------------------
    @property
    def where(self) -> str:
        return self.path or self.name

    @property
    def meta(self) -> dict[str, Any]:
        return dict(getattr(self.module(), "MTMC", {}) or {})

    @property
    def split(self) -> str | None:
        return self.meta.get("split")

    @property
    def library_ops(self) -> tuple[str, ...]:
        return tuple(self.meta.get("library", ()))

    @property
    def precisions(self) -> tuple[str, ...]:
        return tuple(self.meta.get("precision", ()))

    def sizes(self, device_type: str) -> list[Sizes]:
        """Override sets to check on a device: the CPU interpreter runs small sizes only."""
        if device_type == "cpu":
            return [dict(s) for s in self.meta.get("cpu_sizes", [{}])]
        return [{}] + [dict(s) for s in self.meta.get("gpu_sizes", [])]

    # --- instantiation ----------------------------------------------------------------------------
    def module(self, sizes: Sizes | None = None) -> types.ModuleType:
        """A fresh module namespace of the task source with `sizes` assigned to its constants."""
        key = repr(sorted((sizes or {}).items()))
        if key not in self._modules:
            self._modules[key] = _load_module(self, sizes or {})
        return self._modules[key]

    def init_inputs(self, sizes: Sizes | None = None) -> list[Any]:
        return list(self.module(sizes).get_init_inputs())

    def make_model(self, seed: int = 0, sizes: Sizes | None = None) -> torch.nn.Module:
        """A reference `Model` whose weights depend only on `seed`."""
        module = self.module(sizes)
        torch.manual_seed(seed)
        return self.in_mode(module.Model(*module.get_init_inputs()))

    @property
    def mode(self) -> str | None:
        """"train", "eval" or None (as the constructor leaves the module): module docstring."""
        mode = self.meta.get("mode")
        if mode is not None and mode not in MODES:
            raise TaskError(f"{self.where}: MTMC['mode'] must be one of {MODES}, not {mode!r}")
        return mode

    def in_mode(self, model: torch.nn.Module) -> torch.nn.Module:
        """`model` (the reference or a candidate) set to the task's mode, its dropout layers off."""
        return set_mode(model, self.mode)

    def make_inputs(self, seed: int = 0, sizes: Sizes | None = None) -> list[Any]:
        torch.manual_seed(seed)
        return list(self.module(sizes).get_inputs())


def on_meta(build: Callable[[], torch.nn.Module]) -> torch.nn.Module:
    """`build()` on the meta device (no memory, no compute). A constructor that reads tensor values
    (`.item()`: KernelBench's Swin tasks) cannot run there: it is built on the CPU and moved."""
    try:
        with torch.device("meta"):
            return build()
    except Exception as err:
        if not needs_real_values(err):
            raise
    return build().to("meta")


def needs_real_values(err: Exception) -> bool:
    """An error of the meta device itself (no data to read, no meta kernel), not of the task."""
    return isinstance(err, NotImplementedError) or "meta tensor" in str(err)


def set_mode(model: torch.nn.Module, mode: str | None) -> torch.nn.Module:
    """Training or eval mode if `mode` names one, every dropout layer in eval (the identity): see
    the module docstring."""
    if mode is not None:
        model.train(mode == "train")
    for layer in model.modules():
        if isinstance(layer, DROPOUTS):
            layer.eval()
    return model


def _load_module(task: Task, sizes: Sizes) -> types.ModuleType:
    try:
        code = compile(task.source, task.where, "exec")
    except SyntaxError as err:
        raise TaskError(f"{task.where}: syntax error at line {err.lineno}: {err.msg}") from None
    module = types.ModuleType(f"mtmc_task_{task.name}")
    module.__file__ = task.path or f"<{task.name}>"
    try:
        exec(code, module.__dict__)
    except Exception as err:  # the task file itself is broken: report it, naming the file
        raise TaskError(f"{task.where}: importing the task raised {type(err).__name__}: {err}") from None
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, name):
            raise TaskError(f"{task.where}: no `{name}` defined (KernelBench format needs Model, "
                            "get_inputs, get_init_inputs)")
    if not (isinstance(module.Model, type) and issubclass(module.Model, torch.nn.Module)):
        raise TaskError(f"{task.where}: `Model` must be a torch.nn.Module subclass")
    unknown = set(sizes) - set(vars(module))
    if unknown:
        raise TaskError(f"{task.where}: size overrides name unknown constants {sorted(unknown)}")
    for key, value in sizes.items():
        setattr(module, key, value)
    return module


def task_from_file(path: str | Path, name: str | None = None) -> Task:
    path = Path(path)
    if not path.is_file():
        raise TaskError(f"{path}: no such task file")
    return Task(name=name or path.stem, source=path.read_text(), path=str(path))
