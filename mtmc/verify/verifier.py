"""The verifiers: `InterpreterVerifier` (CPU, correctness only) and `LocalVerifier` (one warm
fork-server per GPU, correctness + proof of work + timing), and `make_verifier`, which picks one.
Both hold an `Engine` (engine.py), which runs the protocol of docs/design.md "Verification"; the
rules it judges with are judging.py's. Both judge one program per worker at once through
`verify_many` (many.py): `concurrency` is their number of workers.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Self

import torch

import mtmc
from mtmc.program import Program
from mtmc.tasks import Task
from mtmc.verify import timing_gpu
from mtmc.verify.batch import verify_batch
from mtmc.verify.case_io import GPU_LOCK_ENV, JOBS_PER_GPU_ENV, RESIDENT_SHARE, RESIDENT_SHARE_ENV
from mtmc.verify.engine import (  # noqa: F401  (re-exported: callers import them from here)
    FULL_ISOLATION,
    INTERPRETER_DEVICE,
    LARGE_CASE_BYTES,
    REFERENCE_BYTES_KEPT,
    REFERENCES_KEPT,
    VERIFIER_VERSION,
    Engine,
    Settings,
    VerifierError,
    cacheable,
    verdict_key,
)
from mtmc.verify.forkserver import clean_env
from mtmc.verify.judging import Reference  # noqa: F401  (re-exported)
from mtmc.verify.judging import timing_outputs_problem as _timing_outputs_problem  # noqa: F401  (its old name)
from mtmc.verify.many import judge_concurrently
from mtmc.verify.verdict import Verdict
from mtmc.verify.worker_pool import WorkerPool


# --- the backends ------------------------------------------------------------------------------
class _EngineVerifier:
    """What both backends share: an `Engine` over a worker pool, called by as many threads as the
    pool has workers (the engine takes whichever worker is free and guards its per-task caches)."""

    engine: Engine

    @property
    def concurrency(self) -> int:
        """Programs judged at once: one per worker. `mtmc bench` without GPU workers of its own runs
        this many tasks at a time; `mtmc tree record` judges batches of this many."""
        return len(self.engine.pool.workers)

    def verify(self, task: Task, program: Program) -> Verdict:
        return self.engine.verify(task, program)

    def verify_many(self, pairs: Iterable[tuple[Task, Program]]) -> Iterator[tuple[int, Verdict]]:
        """(index into `pairs`, verdict) for every pair, as they finish, one per worker at once; a
        VerifierError of some pairs comes after the others' verdicts, as many.BatchError."""
        return judge_concurrently(self.verify, pairs, self.concurrency)

    def verify_batch(self, task: Task, programs: list[Program]) -> list[Verdict]:
        """Many programs of one task in one child, for programs one trusts (batch.py): the template
        coder's, when a tree is recorded. A verdict for each, in order, flagged `trusted_batch`."""
        return verify_batch(self.engine, task, programs)

    def close(self) -> None:
        self.engine.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class InterpreterVerifier(_EngineVerifier):
    """CPU backend: Triton's interpreter in fork-server workers. Correctness only, no timings."""

    def __init__(self, seeds: int = 3, timeout_s: float = 120.0, workers: int = 1,
                 cache_path: str | None = None, static_checks: bool = True,
                 memory_limit_gb: float | None = 8.0,
                 cpu_threads: int | None = 1, seed: int | None = None, strict: bool = False,
                 large_case_bytes: int = LARGE_CASE_BYTES, tf32_follows_eager: bool = True) -> None:
        """`tf32_follows_eager` is LocalVerifier's; taken here so one config serves both backends, it
        changes nothing on the CPU (no TF32 there: eager's error is never measured)."""
        settings = Settings(seeds=seeds, timeout_s=timeout_s, static_checks=static_checks, seed=seed,
                            strict=strict, baselines=False, large_case_bytes=large_case_bytes,
                            tf32_follows_eager=tf32_follows_eager)
        env = _worker_env({"TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": "",
                           "OMP_NUM_THREADS": str(cpu_threads or 1)})
        pool = WorkerPool("interpreter", [env] * workers, memory_limit_gb, cpu_threads)
        self.engine = Engine(pool, settings, "cpu", cache_path)


class LocalVerifier(_EngineVerifier):
    """GPU backend: one warm fork-server per visible GPU; correctness, proof of work and timing.

    Over several GPUs, `verify_many` judges one program per GPU at once. This process compares large
    outputs on its own current GPU (tensor_compare.py), where in exclusive mode a worker also times
    candidates: for honest timings leave that GPU out of `gpus`, or use shared mode (timing_gpu.py),
    whose timings run on GPUs nothing else uses.
    """

    def __init__(self, seeds: int = 3, timeout_s: float = 120.0, gpus: list[int] | None = None,
                 cache_path: str | None = None, static_checks: bool = True,
                 memory_limit_gb: float | None = None, triton_share_min: float = 0.5,
                 floor_margin: float = 0.9, excess_speedup: float = 10.0,
                 peak_bandwidth: float | None = None, peak_flops_fp32: float | None = None,
                 peak_flops_fp16: float | None = None, peak_bandwidth_max: float | None = None,
                 warmup_ms: float = 100.0, min_reps: int = 10,
                 max_reps: int = 200, target_rse: float = 0.01, time_budget_s: float = 2.0,
                 baselines: bool = True, compile_baseline: bool = True, baseline_timeout_s: float = 900.0,
                 seed: int | None = None, strict: bool = False, workers_per_gpu: int = 1,
                 timing_gpus: list[int] | None = None, shared_compile_cache: bool | None = None,
                 resident_share: float = RESIDENT_SHARE, large_case_bytes: int = LARGE_CASE_BYTES,
                 overlap_baselines: bool | None = None, tf32_follows_eager: bool = True,
                 gpu_lock: bool = False) -> None:
        """`timing_gpus` and `workers_per_gpu` > 1: shared mode (timing_gpu.py), for trusted programs.
        `gpu_lock` (no timing GPUs): one-GPU mode, `workers_per_gpu` jobs on each GPU whose kernels run
        one job at a time under the GPU's lock, trusted batches compiling outside it (timing_gpu.py).
        `shared_compile_cache`: its jobs share one Triton cache (None: on in shared mode only).
        `resident_share`: the share of a GPU's memory its jobs' case inputs may keep there rather than
        in host memory (case_io.RESIDENT_SHARE); it moves data, not verdicts. `large_case_bytes`: one
        case's inputs or outputs past which the task is checked on the large-case plan
        (engine.LARGE_CASE_BYTES).
        `overlap_baselines`: a task's baselines compile beside its reference, each GPU a second
        fork-server for it, and are timed alone (overlap.py); exclusive mode only (None: on there, off
        in shared mode, which already compiles baselines beside other jobs).
        `tf32_follows_eager`: an fp32 output that passes only by a convolution's TF32 allowance, where
        eager computed it in fp32 on this GPU, is refused (reason tf32_beyond_eager); off, only flagged
        (correctness.TF32_BEYOND_EAGER_REFUSAL)."""
        if not 0 <= resident_share <= 1:
            raise ValueError(f"resident_share={resident_share}: a share of the GPU's memory, 0 to 1")
        layout, shared = _gpu_layout(gpus, workers_per_gpu, list(timing_gpus or []), gpu_lock)
        if overlap_baselines is None:
            overlap_baselines = not shared
        if overlap_baselines and shared:
            raise VerifierError("LocalVerifier: overlap_baselines is for exclusive mode; shared mode "
                                "(timing_gpus) already compiles baselines beside other jobs")
        shared_compile_cache = _shared_compile_cache(shared_compile_cache, shared)
        if shared_compile_cache:
            shared += "; one Triton compile cache shared by all their jobs"
        timing = {"warmup_ms": warmup_ms, "min_reps": min_reps, "max_reps": max_reps,
                  "target_rse": target_rse, "budget_s": time_budget_s}
        peaks = {"bandwidth": peak_bandwidth, "flops_fp32": peak_flops_fp32, "flops_fp16": peak_flops_fp16,
                 "bandwidth_max": peak_bandwidth_max}
        settings = Settings(seeds=seeds, timeout_s=timeout_s, static_checks=static_checks,
                            triton_share_min=triton_share_min, floor_margin=floor_margin,
                            excess_speedup=excess_speedup, timing=timing, baselines=baselines,
                            compile_baseline=compile_baseline, baseline_timeout_s=baseline_timeout_s,
                            peaks=peaks, seed=seed, strict=strict, shared_gpus=shared,
                            large_case_bytes=large_case_bytes, overlap_baselines=overlap_baselines,
                            tf32_follows_eager=tf32_follows_eager)
        envs = [_worker_env({"TRITON_INTERPRET": None, "CUDA_VISIBLE_DEVICES": devices,
                             JOBS_PER_GPU_ENV: str(workers_per_gpu),
                             RESIDENT_SHARE_ENV: str(resident_share),
                             GPU_LOCK_ENV: "1" if gpu_lock else None}) for devices, _ in layout]
        pool = WorkerPool("cuda", envs, memory_limit_gb, None, [group for _, group in layout],
                          shared_compile_cache, overlap_baselines, gpu_lock)  # lanes (overlap.py)
        self.engine = Engine(pool, settings, "cuda", cache_path)


def make_verifier(backend: str = "auto", **kwargs: Any) -> InterpreterVerifier | LocalVerifier:
    """`auto` picks LocalVerifier when a GPU is visible. A keyword the chosen backend does not take
    is refused (TypeError, one sentence): dropped silently, a setting would not be in force."""
    backends = {"local": LocalVerifier, "interpreter": InterpreterVerifier}
    if backend == "auto":
        backend = "local" if torch.cuda.is_available() else "interpreter"
    if backend not in backends:
        raise ValueError(f"make_verifier: backend={backend!r}: choose auto, {', '.join(backends)}")
    cls = backends[backend]
    accepted = inspect.signature(cls).parameters
    foreign = sorted(set(kwargs) - set(accepted))
    if foreign:
        raise TypeError(f"make_verifier: the {backend} backend ({cls.__name__}) takes no "
                        f"{', '.join(foreign)}; it takes {', '.join(accepted)}")
    return cls(**kwargs)


def _gpu_layout(gpus: list[int] | None, workers_per_gpu: int, timing_gpus: list[int],
                gpu_lock: bool = False) -> tuple[list[tuple[str, int | None]], str]:
    """Each worker's CUDA_VISIBLE_DEVICES and timing group (timing_gpu.worker_layout), and shared
    mode in words ("" in exclusive mode). No `gpus`: every visible GPU but the timing ones."""
    if gpus is None:
        gpus = [g for g in range(torch.cuda.device_count()) if g not in timing_gpus]
    if not gpus:
        raise VerifierError("LocalVerifier needs a CUDA GPU; use InterpreterVerifier on the CPU")
    try:
        layout = timing_gpu.worker_layout([_physical(g) for g in gpus], workers_per_gpu,
                                          [_physical(g) for g in timing_gpus], gpu_lock)
    except ValueError as err:
        raise VerifierError(f"LocalVerifier: {err}") from None
    if gpu_lock:
        return layout, (f"{workers_per_gpu} workers on each of GPU(s) {list(gpus)}, every job's kernels one "
                        "job at a time under its GPU's lock (gpu_lock)")
    shared = (f"{workers_per_gpu} workers on each of GPU(s) {list(gpus)}, timed one at a time on GPU(s) "
              f"{timing_gpus}") if timing_gpus else ""
    return layout, shared


def _shared_compile_cache(requested: bool | None, shared: str) -> bool:
    """A compile cache shared by every job is for trusted programs (worker_pool.compile_cache_folder),
    as shared mode is: on by default there, refused in exclusive mode (where LLM-written candidates
    are judged)."""
    if requested and not shared:
        raise VerifierError("LocalVerifier: shared_compile_cache needs shared mode (timing_gpus): one job "
                            "could plant the kernels a later one loads, so it is for trusted programs only")
    return bool(shared) if requested is None else requested


def _worker_env(overrides: dict[str, str | None]) -> dict[str, str]:
    package_root = str(Path(mtmc.__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in [package_root, os.environ.get("PYTHONPATH", "")] if p)
    return clean_env(dict(os.environ), {**overrides, "PYTHONPATH": path})


def _physical(gpu: int) -> str:
    """The physical id of logical GPU `gpu` under the caller's own CUDA_VISIBLE_DEVICES."""
    visible = [d for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    return visible[gpu] if gpu < len(visible) else str(gpu)
