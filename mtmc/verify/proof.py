"""Proof of work, inside the candidate's process: did its own Triton kernels do the computing?

Three instruments, installed by trusted code before the candidate module is imported:
- `LaunchCounter` wraps Triton's launch entry (`JITFunction.run`, and `InterpretedFunction.run`
  under TRITON_INTERPRET, where Triton's launch hooks are skipped) and counts launches of kernels
  whose source lives in the candidate's file. Zero launches in a forward is a decoy (S2).
- `OpCensus` is a TorchDispatchMode around each forward call: every aten op the candidate runs
  outside a Triton launch must be glue or an op the task's library policy allows (S1, S3). This
  sees what the AST cannot: `x * 2 + y`, aliases, helper layers.
- `snapshot_identities` records the identity of the functions the harness relies on (timers,
  synchronisation, comparison, the launch wrappers themselves); any change means the candidate
  monkey-patched its grader (T3, S19).
On a GPU, `triton_share` adds the profiler's view: the share of device time spent in the
candidate's kernels (S3, "lazy optimisation").
"""

from __future__ import annotations

import functools
import importlib
from collections import Counter
from collections.abc import Callable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

# Everything the harness calls after the candidate is loaded. Replacing any of these is tampering.
WATCHED = (
    "torch.cuda.Event", "torch.cuda.Event.record", "torch.cuda.Event.elapsed_time",
    "torch.cuda.Event.synchronize", "torch.cuda.synchronize", "time.perf_counter",
    "time.perf_counter_ns", "time.monotonic", "threading.active_count", "torch.equal",
    "torch.save", "torch.load", "torch.Tensor.clone", "torch.Tensor.copy_", "torch.Tensor.cpu",
    "torch.Tensor.to", "torch.Tensor.detach", "torch.Tensor.__eq__", "torch.Tensor.isnan",
    "torch.Tensor.data_ptr", "torch.nn.Module.__call__", "torch.nn.Module._call_impl",
    "torch.profiler.profile", "torch.manual_seed",
    "triton.runtime.jit.JITFunction.run", "triton.runtime.interpreter.InterpretedFunction.run",
    "triton.runtime.autotuner.Autotuner.run", "triton.runtime.autotuner.Heuristics.run",
)


def _resolve(dotted: str) -> Any:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):  # longest importable prefix, then attributes
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:
            obj = getattr(obj, part, None)
        return obj
    return None


def snapshot_identities() -> dict[str, int]:
    return {name: id(_resolve(name)) for name in WATCHED}


def changed_identities(before: dict[str, int]) -> list[str]:
    now = snapshot_identities()
    return [name for name in WATCHED if now[name] != before[name]]


def _current_stream() -> int:
    return torch.cuda.current_stream().cuda_stream if torch.cuda.is_initialized() else 0


class LaunchCounter:
    """Counts launches of Triton kernels defined in `source_file`, by kernel name."""

    def __init__(self, source_file: str) -> None:
        self.source_file = source_file
        self.kernels: Counter[str] = Counter()
        self.streams: set[int] = set()  # CUDA streams the kernels were launched on (0: none / CPU)
        self.depth = 0  # > 0 while inside Triton's launch machinery (its torch ops are not ours)

    @property
    def launches(self) -> int:
        return sum(self.kernels.values())

    def install(self) -> LaunchCounter:
        from triton.runtime import autotuner, jit

        jit.JITFunction.run = self._counting(jit.JITFunction.run)
        try:
            from triton.runtime import interpreter

            interpreter.InterpretedFunction.run = self._counting(interpreter.InterpretedFunction.run)
        except ImportError:
            pass
        # Autotuning benchmarks and resets buffers with torch ops: Triton's bookkeeping, not the
        # candidate's compute, so the census looks away while inside.
        autotuner.Autotuner.run = self._scoped(autotuner.Autotuner.run)
        autotuner.Heuristics.run = self._scoped(autotuner.Heuristics.run)
        return self

    def _counting(self, original: Callable) -> Callable:
        counter = self

        @functools.wraps(original)
        def run(fn_self, *args, **kwargs):
            if not kwargs.get("warmup", False) and _defined_in(fn_self, counter.source_file):
                counter.kernels[fn_self.fn.__name__] += 1
                counter.streams.add(_current_stream())
            counter.depth += 1
            try:
                return original(fn_self, *args, **kwargs)
            finally:
                counter.depth -= 1

        return run

    def _scoped(self, original: Callable) -> Callable:
        counter = self

        @functools.wraps(original)
        def run(*args, **kwargs):
            counter.depth += 1
            try:
                return original(*args, **kwargs)
            finally:
                counter.depth -= 1

        return run


def _defined_in(kernel: Any, source_file: str) -> bool:
    fn = getattr(kernel, "fn", None)
    code = getattr(fn, "__code__", None)
    return code is not None and code.co_filename == source_file


class OpCensus(TorchDispatchMode):
    """Records aten ops run outside Triton launches that the policy does not allow."""

    def __init__(self, counter: LaunchCounter, allowed: frozenset[str]) -> None:
        super().__init__()
        self.counter = counter
        self.allowed = allowed
        self.foreign: Counter[str] = Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if self.counter.depth == 0:
            name = func.overloadpacket.__name__
            if name not in self.allowed:
                self.foreign[name] += 1
        return func(*args, **(kwargs or {}))


def triton_share(call: Callable[[], Any], kernel_names: set[str], iters: int = 3) -> dict[str, Any]:
    """Share of device time spent in kernels named like the candidate's @triton.jit functions.

    Kernel names are matched exactly (Triton names a compiled kernel after its Python function);
    a prefix match would let a kernel named "void" claim every cuBLAS kernel's time.
    """
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(iters):
            call()
        torch.cuda.synchronize()
    total = ours = 0.0
    by_name: Counter[str] = Counter()
    for event in prof.events():
        if event.device_type != DeviceType.CUDA:
            continue
        duration = float(event.time_range.elapsed_us())
        total += duration
        by_name[event.name] += duration
        if event.name in kernel_names:
            ours += duration
    top = [[name, us / iters] for name, us in by_name.most_common(8)]
    return {"share": ours / total if total else None, "device_us": total / iters, "top_kernels": top}
