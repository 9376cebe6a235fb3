"""Find tasks: a built-in name, a KernelBench-format file, or a folder of them (a suite)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from mtmc.tasks.task import Task, TaskError, on_meta, task_from_file
from mtmc.tasks.variants import is_variant, variant_names, variant_task

BUILTIN_DIR = Path(__file__).parent / "builtin"
SPLITS = ("train", "eval")


def builtin_names() -> list[str]:
    return sorted(p.stem for p in BUILTIN_DIR.glob("*.py") if not p.stem.startswith("_"))


# suites named by a word: their task names, each loadable by `load_task`
NAMED_SUITES: dict[str, Callable[[], list[str]]] = {"builtin": builtin_names, "variants": variant_names}


def load_task(ref: str | Path) -> Task:
    """A task from a built-in name (`softmax`), a variant's (`matmul_fp16__small_m`) or a path to a
    KernelBench-format file."""
    ref = str(ref)
    path = Path(ref)
    if path.suffix == ".py" or path.exists():
        task = task_from_file(path)
    elif ref in builtin_names():
        task = task_from_file(BUILTIN_DIR / f"{ref}.py")
    elif is_variant(ref):
        task = variant_task(ref)
    else:
        raise TaskError(f"{ref}: not a task file and not a built-in task (see `mtmc tasks`)")
    validate(task)
    return task


@dataclass(frozen=True)
class BrokenTask:
    """A suite file that does not load: a row of a report (an error row of a bench), not a crash."""

    name: str  # the file's stem, as the task would have been named
    path: str
    error: str  # the TaskError's one-line message, naming the file


def load_suite(ref: str | Path) -> list[Task]:
    """`builtin` or `variants` (`:train` or `:eval` for one split), a folder of task files, or one task.

    Raises the first broken file's TaskError; `scan_suite` keeps them instead.
    """
    entries = scan_suite(ref)
    for entry in entries:
        if isinstance(entry, BrokenTask):
            raise TaskError(entry.error)
    return entries


def scan_suite(ref: str | Path, on_load: Callable[[int, int, Task | BrokenTask], None] | None = None
               ) -> list[Task | BrokenTask]:
    """As `load_suite`, but a folder's (or a file's) broken task files come back as `BrokenTask`s.

    `on_load(i, n, entry)` follows a folder's loading file by file (checking a large task takes seconds).
    """
    ref = str(ref)
    suite, _, split = ref.partition(":")
    if suite in NAMED_SUITES:
        if split and split not in SPLITS:
            raise TaskError(f"{ref}: unknown split {split!r}; use one of {SPLITS}")
        tasks = [load_task(name) for name in NAMED_SUITES[suite]()]
        return [t for t in tasks if not split or t.split == split]
    path = Path(ref)
    if path.is_dir():
        files = sorted(p for p in path.glob("*.py") if not p.stem.startswith("_"))
        if not files:
            raise TaskError(f"{path}: folder holds no task files (*.py)")
        entries = []
        for i, file in enumerate(files, 1):
            entries.append(_load_or_broken(file))
            if on_load is not None:
                on_load(i, len(files), entries[-1])
        return entries
    if path.suffix == ".py" and path.is_file():
        return [_load_or_broken(path)]
    return [load_task(ref)]


def _load_or_broken(path: Path) -> Task | BrokenTask:
    try:
        return load_task(path)
    except TaskError as err:
        return BrokenTask(name=path.stem, path=str(path), error=str(err))


def validate(task: Task) -> None:
    """Run the task's functions on meta tensors (no memory, no compute) to catch bad files early."""
    task.module()  # syntax, import, missing names
    _ = task.mode  # a known MTMC["mode"], if any
    try:
        model = on_meta(lambda: task.make_model(seed=0))
    except Exception as err:
        raise TaskError(f"{task.where}: building Model(*get_init_inputs()) raised "
                        f"{type(err).__name__}: {err}") from None
    try:
        with torch.device("meta"):
            inputs = task.make_inputs(seed=0)
    except Exception as err:
        raise TaskError(f"{task.where}: get_inputs() raised {type(err).__name__}: {err}") from None
    check_inputs(task, inputs)
    try:
        with torch.no_grad():
            out = model(*inputs)
    except NotImplementedError:
        return  # an op with no meta kernel: the real run will tell
    except Exception as err:
        numbers = [i for i, x in enumerate(inputs) if not isinstance(x, torch.Tensor)]
        blame = f" on get_inputs()'s non-tensor input(s) at {numbers}" if numbers else ""
        raise TaskError(f"{task.where}: Model.forward raised {type(err).__name__}{blame}: {err}") from None
    check_outputs(task, out)


def check_inputs(task: Task, inputs: object) -> None:
    """Tensors, or plain numbers (KernelBench passes a scalar factor so): anything else, e.g. a list or
    a numpy array, is a task bug the verifier would otherwise meet mid-run."""
    if not isinstance(inputs, list | tuple):
        raise TaskError(f"{task.where}: get_inputs() must return a list, got {type(inputs).__name__}")
    for i, x in enumerate(inputs):
        if not isinstance(x, torch.Tensor | int | float | bool):
            raise TaskError(f"{task.where}: get_inputs() returned a {type(x).__name__} at position {i}; "
                            "each input must be a tensor or a Python number")


def check_outputs(task: Task, out: object) -> None:
    outs = out if isinstance(out, tuple | list) else [out]
    if not outs or not all(isinstance(o, torch.Tensor) for o in outs):
        kinds = ", ".join(type(o).__name__ for o in outs) or "nothing"
        raise TaskError(f"{task.where}: Model.forward must return a tensor (or a tuple of tensors), "
                        f"got {kinds}")
