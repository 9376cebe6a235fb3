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
candidate's kernels (S3, "lazy optimisation"), and `foreign_kernels` the rule that replaces it:
every compute kernel that ran must be one of the candidate's Triton kernels; only allocation, copy
and fill kernels may run besides.

The census must see host compute wherever Triton runs candidate code inside a launch: heuristics
functions, autotune hooks, grid functions and (under the interpreter) kernel bodies. So it looks
away only while Triton itself moves arguments (the interpreter's host copies) or benchmarks configs,
never for a whole launch. Around it, the instruments are tamper-evident rather than unreachable
(the candidate shares their process; the static checks are the barrier in front): each has its
identity watched, the launch counter keeps a second tally a forger must find too, the dispatch
stack is checked around every forward (a popped census is seen), thread starts from the candidate's
code are counted (a dispatch mode does not cover other threads), and moving tensors to numpy or
Python lists during a forward is host compute however it is reached.
"""

from __future__ import annotations

import functools
import importlib
import sys
import threading
from collections import Counter
from collections.abc import Callable, Collection
from typing import Any

import torch
import torch.utils._python_dispatch as python_dispatch
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
    # the instruments themselves: replacing a census method or unhooking a guard is tampering
    "mtmc.verify.proof.OpCensus.__torch_dispatch__", "mtmc.verify.proof.LaunchCounter.consistent",
    "mtmc.verify.proof.census_intact", "torch.utils._python_dispatch.TorchDispatchMode.__enter__",
    "torch.utils._python_dispatch.TorchDispatchMode.__exit__", "torch.utils._python_dispatch._pop_mode",
    "torch.utils._python_dispatch._pop_torch_dispatch_stack", "torch._C._pop_torch_dispatch_stack",
    "torch._C._len_torch_dispatch_stack", "threading.Thread.start", "torch.Tensor.numpy",
    "torch.Tensor.__array__", "torch.Tensor.__dlpack__", "torch.Tensor.tolist",
    "triton.runtime.autotuner.Autotuner._bench",
    "triton.runtime.interpreter.GridExecutor._init_args_hst",
    "triton.runtime.interpreter.GridExecutor._restore_args_dev",
    # the free-memory scrub (scrub.py holds its own references from import; replacing these is tampering)
    "torch.cuda.memory_snapshot", "torch._C._cuda_memorySnapshot",
    "torch._C._construct_storage_from_data_pointer", "torch.empty", "torch.Tensor.set_", "torch.Tensor.fill_",
    "mtmc.verify.scrub.FreeMemoryScrub.__call__", "mtmc.verify.scrub.Scrubbed.before",
)
# Watched names a CPU-only build of torch lacks (CUDA bindings); on such a build they resolve to None
# and are still watched: a candidate that sets one changes its identity.
CUDA_BUILD_ONLY = ("torch._C._cuda_memorySnapshot",)
HOST_EXITS = ("numpy", "__array__", "__dlpack__", "tolist")  # Tensor methods that hand data to the host


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
        self.depth = 0  # > 0 while Triton moves arguments or benchmarks (its torch ops are not ours)
        self.in_forward = False  # set by the child around each forward call
        self.host_exits: Counter[str] = Counter()  # Tensor.numpy() & co. during forwards, any thread
        self.threads_spawned = 0  # threads started from the candidate's code
        self.pops = 0  # dispatch-mode pops through Python (a census popped by the candidate)
        tally = [0]  # a second launch tally, in a closure: forging `kernels` alone is seen

        def count(name: str) -> None:
            self.kernels[name] += 1
            tally[0] += 1

        self._count = count
        self._tally = lambda: tally[0]

    def consistent(self) -> bool:
        """False when the launch counts were written by someone other than the launch wrapper."""
        return sum(self.kernels.values()) == self._tally()

    @property
    def launches(self) -> int:
        return sum(self.kernels.values())

    def install(self) -> LaunchCounter:
        from triton.runtime import autotuner, jit

        jit.JITFunction.run = self._counting(jit.JITFunction.run, scoped=True)
        try:
            from triton.runtime import interpreter

            interpreter.InterpretedFunction.run = self._counting(interpreter.InterpretedFunction.run, False)
            # The interpreter's host copies of the arguments (set_, copy_) are Triton's, not ours.
            for name in ("_init_args_hst", "_restore_args_dev"):
                setattr(interpreter.GridExecutor, name, self._scoped(getattr(interpreter.GridExecutor, name)))
        except ImportError:
            pass
        # Benchmarking configs resets buffers and reads timers with torch ops: Triton's bookkeeping.
        # Autotuner.run and Heuristics.run stay in view: they call the candidate's hooks.
        autotuner.Autotuner._bench = self._scoped(autotuner.Autotuner._bench)
        self._guard_host_exits()
        self._guard_threads()
        self._guard_dispatch_stack()
        return self

    def _counting(self, original: Callable, scoped: bool) -> Callable:
        counter = self

        @functools.wraps(original)
        def run(fn_self, *args, **kwargs):
            if not kwargs.get("warmup", False) and _defined_in(fn_self, counter.source_file):
                counter._count(fn_self.fn.__name__)
                counter.streams.add(_current_stream())
            counter.depth += scoped  # on a GPU, the device profile judges what a launch ran
            try:
                return original(fn_self, *args, **kwargs)
            finally:
                counter.depth -= scoped

        return run

    def _guard_host_exits(self) -> None:
        counter, main = self, threading.main_thread()
        for name in HOST_EXITS:
            original = getattr(torch.Tensor, name)

            def exit_(tensor, *args, _original=original, _name=name, **kwargs):
                if counter.in_forward and (counter.depth == 0 or threading.current_thread() is not main):
                    counter.host_exits[f"Tensor.{_name}"] += 1
                return _original(tensor, *args, **kwargs)

            setattr(torch.Tensor, name, functools.wraps(original)(exit_))

    def _guard_threads(self) -> None:
        counter, original = self, threading.Thread.start

        @functools.wraps(original)
        def start(thread):
            frame = sys._getframe(1)
            while frame is not None:
                if frame.f_code.co_filename == counter.source_file:
                    counter.threads_spawned += 1
                    break
                frame = frame.f_back
            return original(thread)

        threading.Thread.start = start

    def _guard_dispatch_stack(self) -> None:
        counter = self

        def counted(original: Callable) -> Callable:
            @functools.wraps(original)
            def pop(*args, **kwargs):
                counter.pops += 1
                return original(*args, **kwargs)
            return pop

        python_dispatch._pop_mode = counted(python_dispatch._pop_mode)
        python_dispatch._pop_torch_dispatch_stack = counted(python_dispatch._pop_torch_dispatch_stack)
        torch._C._pop_torch_dispatch_stack = counted(torch._C._pop_torch_dispatch_stack)

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


def census_intact(census: OpCensus, pops_before: int) -> str:
    """Inside the census's `with`, after a forward: why the census no longer sees every op, or ''."""
    if census.counter.pops != pops_before:
        return "a dispatch mode was popped during forward (the op census was switched off)"
    if python_dispatch._get_current_dispatch_mode() is not census:
        return "the op census is no longer the active dispatch mode"
    return ""


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


def triton_share(call: Callable[[], Any], kernel_names: Collection[str], iters: int = 3) -> dict[str, Any]:
    """Share of device time spent in kernels named like the candidate's @triton.jit functions.

    `kernel_names` is read after the calls: the launch counter's live tally includes kernels the
    profiled calls launched for the first time.

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
    return {"share": ours / total if total else None, "device_us": total / iters, "top_kernels": top,
            "foreign_kernels": foreign_kernels(by_name, kernel_names)}


# Device kernels that only allocate, copy or fill (PyTorch's names for them, and the runtime's
# memcpy/memset): the glue a forward may run besides its own Triton kernels.
GLUE_KERNEL_MARKERS = ("Memcpy", "Memset", "direct_copy_kernel", "FillFunctor", "fill_kernel",
                       "CatArrayBatchedCopy", "arange_cuda", "copy_device_to_device")


def foreign_kernels(by_name: dict[str, float], ours: Collection[str]) -> list[str]:
    """Device kernels that are neither the candidate's Triton kernels (exact names: Triton names a
    compiled kernel after its function) nor glue, most time first. Any of them is compute done by
    someone else's kernel (S1/S3): this rule replaces a share-of-time threshold, which padding the
    candidate's own kernels with busy work could reach."""
    ranked = sorted(by_name, key=lambda name: -by_name[name])
    return [name for name in ranked if name not in ours and not any(m in name for m in GLUE_KERNEL_MARKERS)]
