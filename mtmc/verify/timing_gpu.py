"""Shared mode: several workers per GPU, with every timing on a GPU that only timing uses.

A verdict's cost is mostly the candidate's Triton compiles (CPU time in its child), so a GPU host
with many cores judges several programs at once when each GPU has several workers. Timings taken
while other jobs run kernels on the same GPU would be wrong, so in shared mode a worker sees two
devices (CUDA_VISIBLE_DEVICES="<compute>,<timing>"): the correctness cases run on device 0, beside the
other workers of that GPU; the proof-of-work profile and the timing (and the baselines' timing) run
on device 1, a GPU that no job computes on, one job at a time under an exclusive file lock.

Kernels compiled on device 0 load from the Triton cache on device 1 (same architecture), and an
autotuned kernel keeps the config it chose, so the locked part is only profile and timing. The jobs
share one Triton cache (worker_pool.compile_cache_folder), so a kernel another job compiled loads.
Autotuning itself runs on the shared GPU, so its choice can be noisier than in exclusive mode.

For programs one trusts (the template coder, tree recording): a hostile candidate can hold the lock
or launch kernels on the timing GPU out of turn, slowing other candidates' timings (never speeding
its own). Candidates an LLM wrote are judged in the default exclusive mode, one worker per GPU.

One-GPU mode (`gpu_lock`, a host with one GPU, so no GPU to time on alone): N workers on each GPU
and one lock per GPU that covers every kernel any of its jobs runs. A trusted batch (trusted_batch.py)
takes it itself, per program, for its cases and timing only; its compiles run before, outside it
(compile_pass.py), beside the other jobs' locked GPU work. The reference, baseline and candidate
jobs, which compile little, run whole under it, held by the main process (worker_pool.py). Nothing
runs kernels outside it but what the compile pass cannot avoid: a program's forward allocating and
reshaping its tensors (torch's layout ops, a few microseconds of copies).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TIMING_DEVICE = 1  # a shared-mode worker's CUDA_VISIBLE_DEVICES is "<compute>,<timing>"
TIMED_JOBS = frozenset({"candidate", "baseline", "tree_batch"})  # the jobs that time on a timing GPU
# one-GPU mode: the job that takes its GPU's lock itself, around its kernels only (its compiles outside
# it), and those the main process runs whole under the lock
CHILD_LOCKED_JOBS = frozenset({"tree_batch"})
MAIN_LOCKED_JOBS = frozenset({"reference", "baseline", "candidate"})


def worker_layout(gpus: list[str], workers_per_gpu: int, timing_gpus: list[str],
                  gpu_lock: bool = False) -> list[tuple[str, int | None]]:
    """Each worker's CUDA_VISIBLE_DEVICES and timing group (an index into `timing_gpus`).

    Exclusive mode (no timing GPUs): one worker per GPU, no group. Shared mode: `workers_per_gpu`
    workers per compute GPU, each paired with the timing GPUs in turn. One-GPU mode (`gpu_lock`):
    `workers_per_gpu` workers per GPU, the group the index of their GPU (its lock)."""
    if workers_per_gpu < 1:
        raise ValueError(f"workers_per_gpu must be >= 1, got {workers_per_gpu}")
    if gpu_lock:
        if timing_gpus:
            raise ValueError("gpu_lock is for hosts without a timing GPU: with timing GPUs use shared mode")
        return [(gpu, index) for index, gpu in enumerate(gpus) for _ in range(workers_per_gpu)]
    if not timing_gpus:
        if workers_per_gpu > 1:
            raise ValueError("workers_per_gpu > 1 needs timing_gpus: timings taken beside other jobs' "
                             "kernels on the same GPU would be wrong")
        return [(gpu, None) for gpu in gpus]
    shared = sorted(set(gpus) & set(timing_gpus))
    if shared:
        raise ValueError(f"GPU(s) {', '.join(shared)} are both compute and timing GPUs: a timing GPU "
                         "must run nothing but timings")
    workers = [gpu for gpu in gpus for _ in range(workers_per_gpu)]
    return [(f"{gpu},{timing_gpus[i % len(timing_gpus)]}", i % len(timing_gpus))
            for i, gpu in enumerate(workers)]


def lock_file(folder: Path, group: int) -> str:
    """The lock of timing group `group`, created readable by all: a candidate's child (user nobody,
    a read-only view) opens it to take the lock."""
    path = folder / f"timing-gpu{group}.lock"
    path.touch()
    path.chmod(0o644)
    return str(path)


@contextmanager
def exclusive(lock: str | None) -> Iterator[None]:
    """Hold `lock` (flock, released when the file closes, also if the child dies); None: no lock."""
    if lock is None:
        yield
        return
    fd = os.open(lock, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


@contextmanager
def gpu_section(lock: str | None) -> Iterator[None]:
    """One-GPU mode: this GPU's lock held, and every kernel queued meanwhile finished before it goes
    (another job's timing must not overlap them). No lock: nothing changes."""
    if lock is None:
        yield
        return
    import torch

    with exclusive(lock):
        try:
            yield
        finally:
            if torch.cuda.is_initialized():  # (a CPU job, as in tests, has nothing queued)
                torch.cuda.synchronize()


@contextmanager
def timing_device(lock: str | None) -> Iterator[None]:
    """Shared mode: device 1 (the timing GPU) current, so "cuda" means it. Exclusive mode: as is."""
    if lock is None:
        yield
        return
    import torch

    with torch.cuda.device(TIMING_DEVICE):
        yield


@contextmanager
def on_timing_device(lock: str | None) -> Iterator[None]:
    """Shared mode: the timing GPU current and its lock held; its queued kernels finish before the
    lock goes. Exclusive mode (no lock): nothing changes."""
    if lock is None:
        yield
        return
    import torch

    with timing_device(lock), exclusive(lock):
        try:
            yield
        finally:
            torch.cuda.synchronize()
