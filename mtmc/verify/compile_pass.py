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

The pass is best effort: a forward that fails on garbage values, or a Triton without these seams,
only leaves its compiles to the locked run (slower, never different: the locked run is the verdict).
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
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


def compile_cases(forward: Callable[[dict[str, Any], list[Any]], Any], cases: list[dict[str, Any]],
                  device: str, budget_bytes: float) -> int:
    """`forward(case, inputs)` once per distinct size of `cases` (the same sizes compile the same
    kernels) under compile_only, on stand-ins; a size whose inputs exceed `budget_bytes` is left to
    the locked run (its stand-ins would take device memory another job may need). Returns the sizes
    compiled; a failure ends the pass quietly (see the module docstring)."""
    done: set[str] = set()
    with compile_only() as active:
        if not active:
            return 0
        for case in cases:
            key = json.dumps(case["sizes"], sort_keys=True, default=str)
            nbytes = sum(t.nbytes for t in case["inputs"] if isinstance(t, torch.Tensor))
            if key in done or nbytes > budget_bytes:
                continue
            try:
                forward(case, stand_ins(case["inputs"], device))
            except Exception as err:  # noqa: BLE001  (garbage values may fail a forward: see above)
                log.debug("compile pass stopped: %s: %s", type(err).__name__, err)
                break
            done.add(key)
    return len(done)
