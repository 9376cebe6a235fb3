"""Compile a program's Triton kernels without running them: a trusted batch's first pass over a
program, outside its GPU's lock (one-GPU mode, timing_gpu.py).

    with compile_only():
        model(*inputs)   # every Triton launch compiles its kernel (to the JIT's cache) and returns

Why: on a host with one GPU, every kernel of every job runs under one lock, so that no job's kernels
overlap another's timing; a program's compiles (seconds of CPU: Triton's passes, ptxas) are most of
its verdict (BENCHMARKS.md, eighth session: cases 5.4 s, timing 1.4 s), and under the lock they
would leave the GPU idle. Triton compiles at a kernel's first launch, for the launch's
specialization (dtypes, the alignment of pointers, integers equal to 1 or divisible by 16, the
constexprs); its `JITFunction.run(..., warmup=True)` compiles for that specialization and launches
nothing (Triton 3.x: 3.6 on the GPU hosts, 3.9 here). So the pass runs the program's forward on
uninitialized tensors of its inputs' shapes, strides and dtypes with every launch turned into such a
warm-up: the kernels the locked run launches next are found in the JIT's cache. An autotuned kernel
compiles every config here and benchmarks none: its choice is made under the lock, on the GPU, as
without the pass. What the pass cannot hold back is torch's own work in the forward (allocations,
layout copies: microseconds; the verifier refuses PyTorch compute), which runs on the GPU outside
the lock; its values are garbage, and nothing of it is kept.

The pass is best effort: a forward that fails on garbage values, a size whose stand-ins find no room
(STAND_IN_FREE_SHARE), or a Triton without these seams only leaves its compiles to the locked run
(slower, never different: the locked run is the verdict); the verdict names each such size
(`Pass.note`, a flag of the row), so a run's rows show what compiled where.
"""

from __future__ import annotations

import inspect
import json
import logging
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

log = logging.getLogger(__name__)


def seams() -> tuple[Any, Any] | None:
    """Triton's JITFunction and Autotuner classes, or None where `run` takes no `warmup`."""
    try:
        from triton.runtime.autotuner import Autotuner
        from triton.runtime.jit import JITFunction
    except ImportError:
        return None
    if "warmup" not in inspect.signature(JITFunction.run).parameters:
        return None
    return JITFunction, Autotuner


@contextmanager
def compile_only() -> Iterator[bool]:
    """Within: every Triton launch of this process compiles and returns without launching (yields
    False, and changes nothing, where Triton lacks the seams)."""
    found = seams()
    if found is None:
        yield False
        return
    jit, autotuner = found
    launch, tune = jit.run, autotuner.run

    def warm(self: Any, *args: Any, **kwargs: Any) -> Any:
        return launch(self, *args, **{**kwargs, "warmup": True})

    def every_config(self: Any, *args: Any, **kwargs: Any) -> Any:
        # each config compiled, none benchmarked nor chosen (the cache of choices stays as it was)
        self.nargs = dict(zip(self.arg_names, args, strict=False))  # as Triton does: kwargs may follow
        try:
            for config in self.prune_configs(kwargs):
                self.fn.run(*args, **{**kwargs, **config.all_kwargs()})
        finally:
            self.nargs = None

    jit.run, autotuner.run = warm, every_config
    try:
        yield True
    finally:
        jit.run, autotuner.run = launch, tune


def stand_ins(inputs: list[Any], device: str) -> list[Any]:
    """Uninitialized tensors of the inputs' shapes, strides and dtypes on `device` (no kernel makes
    them), the other inputs as they are."""
    return [torch.empty_strided(t.size(), t.stride(), dtype=t.dtype, device=device)
            if isinstance(t, torch.Tensor) else t for t in inputs]


# The share of the GPU's free memory one program's stand-ins (its inputs, and the outputs its forward
# allocates) may take. Why a share of what is free, not of the whole GPU split between the workers (the
# resident share, 1.5 GiB a job of 12 on an H200): that skipped every built-in task of 2 GiB a case, whose
# compiles (~8 s) then ran under the lock (2026-11-28, one H200). Why a quarter: the jobs that compile at
# once (each starts when its last program leaves the lock: a few at a time) must leave room for the
# locked job's copies and outputs, which would fail its program if they found none.
STAND_IN_FREE_SHARE = 0.25


@dataclass
class Pass:
    """What a compile pass did: the distinct sizes, those compiled, and why the others were left to the
    locked run (`left`, one line each), which the program's verdict carries (trusted_batch.py)."""

    sizes: int = 0
    compiled: int = 0
    left: list[str] = field(default_factory=list)

    @property
    def note(self) -> str:
        """"" when every size compiled here, else a flag for the row: what ran under the lock, and why."""
        if not self.left:
            return ""
        return (f"compile_pass: {self.sizes - self.compiled} of {self.sizes} sizes compiled under the lock "
                f"({'; '.join(self.left)})")


def stand_in_room(device: str) -> float:
    """Bytes one program's stand-ins may take now: STAND_IN_FREE_SHARE of the GPU's free memory."""
    from mtmc.verify.case_io import free_bytes  # (case_io imports the verifier's task machinery)

    return STAND_IN_FREE_SHARE * free_bytes(device)


def compile_cases(forward: Callable[[dict[str, Any], list[Any]], Any], cases: list[dict[str, Any]],
                  device: str, room: Callable[[str], float]) -> Pass:
    """`forward(case, inputs)` once per distinct size of `cases` (the same sizes compile the same
    kernels) under compile_only, on stand-ins; a size whose stand-ins (its inputs, and its outputs from
    `out_meta` where the case has it) exceed `room(device)` bytes is left to the locked run (they would
    take device memory the locked job may need). A failure ends the pass (see the module docstring);
    each size left is logged and named in the result's `left`."""
    done: set[str] = set()
    report = Pass(sizes=len({_key(case) for case in cases}))
    with compile_only() as active:
        if not active:
            report.left.append("this Triton's JITFunction.run takes no warmup")
            return _logged(report)
        for index, case in enumerate(cases):
            key = _key(case)
            if key in done:
                continue
            done.add(key)
            need, free = _stand_in_bytes(case), room(device)
            if need > free:
                report.left.append(f"case {index}: stand-ins {need / 2**30:.2f} GiB over the room "
                                   f"{free / 2**30:.2f} GiB")
                continue
            try:
                forward(case, stand_ins(case["inputs"], device))
            except Exception as err:  # noqa: BLE001  (garbage values may fail a forward: see above)
                report.left.append(f"stopped at case {index}: {type(err).__name__}: {str(err)[:120]}")
                break
            report.compiled += 1
    return _logged(report)


def _key(case: dict[str, Any]) -> str:
    return json.dumps(case["sizes"], sort_keys=True, default=str)


def _stand_in_bytes(case: dict[str, Any]) -> int:
    """The inputs' bytes, and the outputs' (the forward allocates them: torch.empty runs, the kernels
    that would fill them do not)."""
    inputs = sum(t.nbytes for t in case["inputs"] if isinstance(t, torch.Tensor))
    outputs = sum(math.prod(shape) * getattr(torch, dtype.removeprefix("torch.")).itemsize
                  for shape, dtype in case.get("out_meta") or [])
    return inputs + outputs


def _logged(report: Pass) -> Pass:
    if report.left:  # INFO: a run's log shows why a program compiled under the lock
        log.info("%s", report.note)
    return report
