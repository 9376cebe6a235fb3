"""`verifier.overlap_baselines` (off by default): a task's first verdict makes its baselines while its
reference runs, both trusted, on one GPU, and times them alone.

Today's order for one verdict, one worker per GPU (exclusive mode): the reference job, the candidate
job, the judging (this process), then the baseline job, each waiting for the one before; the
baseline job's torch.compile (5 s of CPU for KernelBench level 1's 27_SELU_ and 36_RMSNorm_ on an
H100, issue 25) runs alone. With the setting on, the thread that makes a task's reference holds a
worker and its lane (worker_pool.py: a twin fork-server on the same GPU, for trusted jobs only,
forking each child when its job comes) and runs, in order:

    lane:   reference job ───────────────┐ ends (its child reaped; the lane forks nothing more)
    worker: baseline job: model, compile ┴─ waits at the gate ─ opened ─► inputs, timing (alone)
    then the worker goes back to the pool, and the candidate job starts

- The candidate overlaps nothing trusted: its job starts after both jobs ended.
- No timing overlaps any other job's GPU work: the baseline times only once the gate opens, after
  the reference's child ended, and the worker stays held until the baseline job ends, so no other
  job of the pool runs on that GPU meanwhile (as in exclusive mode today, the main process's own
  comparisons for other threads run on its current GPU: leave it out of `gpus` for honest timings).
- GPU benchmarks inside torch.compile (inductor's autotuning of a kernel's configs, pad_mm) would
  be timings beside the reference: during the early compile they raise `Deferred` (deferred_benchmarks)
  and run at the gate's far side, alone, so the compiled program is the one the alone compile makes.
- Verdicts stay those of the sequential order: the reference job is the same job on the same GPU;
  if it fails, or a float64 floor of it failed (no room beside the baseline: case_io.reference_errors),
  it runs again alone (trusted.py). A failed early compile is compiled again after the gate, alone,
  from scratch; a failed or aborted overlapped baseline job is not kept, and the baselines are made
  the old way when a verdict needs them.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GO, ABORT = "go", "abort"


# --- the main process's side --------------------------------------------------------------------
class Gate:
    """A file the main process holds locked (flock) until it says `go` or `abort` in it; the
    baseline child blocks on the lock and reads the word. Owner-only (0600): a candidate, user nobody
    in a view that hides the pool's folder anyway, cannot open it; a main process that dies drops the
    lock with an empty file (abort)."""

    def __init__(self, folder: Path) -> None:
        self.path = str(folder / f"gate-{secrets.token_hex(8)}")
        self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX)

    def open(self, word: str) -> None:
        if self._fd is None:
            return
        os.pwrite(self._fd, word.encode(), 0)
        os.close(self._fd)  # the lock goes with it
        self._fd = None


@dataclass
class Overlapped:
    """What `reference_and_baseline` ran: each job's outcome and result (None where it did not
    finish) and the seconds the baseline job took after the reference's end (its alone part)."""

    reference: tuple[Any, dict[str, Any] | None]
    baseline: tuple[Any, dict[str, Any] | None] | None
    tail_s: float


def reference_and_baseline(pool: Any, reference_args: dict[str, Any], reference_timeout_s: float,
                           baseline_args: dict[str, Any], baseline_timeout_s: float) -> Overlapped | None:
    """The reference job on a held worker's lane while the baseline job runs on the worker itself
    (module docstring); None if the pool has no lanes (then nothing ran)."""
    worker = pool.take()
    try:
        lane = pool.lane(worker)
        if lane is None:
            return None
        gate = Gate(pool.data_dir("gates"))
        box: dict[str, Any] = {}

        def run_baseline() -> None:
            box["baseline"] = pool.run_on(worker, "baseline", {**baseline_args, "gate": gate.path},
                                          baseline_timeout_s)

        thread = threading.Thread(target=run_baseline, name="mtmc-overlap-baseline", daemon=True)
        thread.start()
        reference = None
        try:
            reference = pool.run_on(lane, "reference", reference_args, reference_timeout_s)
        finally:
            # The reference's child has ended (run_on waited for it): the GPU is the baseline's alone.
            gate.open(GO if reference is not None and reference[0].status == "done" else ABORT)
            ended = time.monotonic()
            thread.join()
            Path(gate.path).unlink(missing_ok=True)
        return Overlapped(reference, box.get("baseline"), round(time.monotonic() - ended, 4))
    finally:
        pool.give(worker)


# --- the baseline child's side ------------------------------------------------------------------
def wait_gate(path: str) -> str:
    """Block until the main process opens the gate; its word (ABORT if it died first)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        word = os.pread(fd, 16, 0).decode(errors="replace")
    finally:
        os.close(fd)
    return GO if word == GO else ABORT


class Deferred(BaseException):  # noqa: N818  (not an error: a benchmark put off until the GPU is ours)
    """Raised by an inductor GPU benchmark during the early compile. A BaseException, so inductor's
    own `except Exception` (a config that fails is benchmarked as infinitely slow) cannot swallow it
    and choose a config from timings never taken."""

    def __init__(self, compiling: bool) -> None:
        super().__init__("a GPU benchmark deferred until the GPU is the baseline's alone")
        self.compiling = compiling  # raised inside the compile (pad_mm), not at the first call's run


BENCHMARK_METHODS = ("benchmark", "benchmark_gpu", "benchmark_gpu_with_cuda_graph")


def can_defer() -> bool:
    """Whether this PyTorch's inductor benchmarks through the one object deferred_benchmarks patches."""
    try:
        from torch._inductor.runtime.benchmarking import benchmarker
    except ImportError:
        return False
    return all(callable(getattr(benchmarker, name, None)) for name in BENCHMARK_METHODS[:2])


@contextmanager
def deferred_benchmarks() -> Iterator[None]:
    """Every GPU benchmark of inductor's raises Deferred while this holds (can_defer first)."""
    import torch
    from torch._inductor.runtime.benchmarking import benchmarker

    def refuse(*args: Any, **kwargs: Any) -> float:
        raise Deferred(compiling=torch._guards.TracingContext.try_get() is not None)

    patched = [name for name in BENCHMARK_METHODS if hasattr(benchmarker, name)]
    for name in patched:
        setattr(benchmarker, name, refuse)  # an instance attribute over the class's method
    try:
        yield
    finally:
        for name in patched:
            delattr(benchmarker, name)


@dataclass
class Early:
    """The baseline child's work before the gate: the timing case's model, compiled (None: compile
    after the gate, as without the overlap)."""

    case: dict[str, Any]
    model: Any
    compiled: Any = None


def early_compile(task: Any, case: dict[str, Any], compiled: bool) -> Early:
    """The timing case's model and, where inductor's benchmarks can be deferred, its torch.compile run
    once on the case's own inputs (made from its seed, as load_inputs will make them) up to the first
    GPU benchmark. Any failure here leaves the compile to after the gate, from scratch."""
    import torch

    from mtmc.verify.case_io import case_inputs, reference_model, run_forward

    early = Early(case, reference_model(task, case, "cuda"))
    if not compiled or not can_defer():
        return early
    module, inputs = torch.compile(early.model), None
    try:
        inputs = case_inputs(task, case, "cuda")
        with deferred_benchmarks(), torch.no_grad():
            run_forward(module, inputs)
        early.compiled = module
    except Deferred as deferred:
        early.compiled = None if deferred.compiling else module
    except Exception:  # out of memory beside the reference, an op inductor cannot compile: after the gate
        early.compiled = None
    finally:
        del inputs
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    if early.compiled is None:
        torch._dynamo.reset()
        early.model = reference_model(task, case, "cuda")  # untouched by the failed call
    return early


def same_case(early: Early | None, case: dict[str, Any]) -> bool:
    """The early model is the timing case's (the main process drew both from one plan)."""
    keys = ("sizes", "model_seed", "input_seed", "mode")
    return early is not None and all(early.case.get(k) == case.get(k) for k in keys)
