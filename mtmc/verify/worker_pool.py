"""A pool of fork-server workers: one per GPU (or N on the CPU), jobs go to whichever is free.

A worker runs one child at a time, so on a GPU backend timing is exclusive per device. Every job
gets a scratch folder (the child's working directory); the child's result file is read back with
`torch.load(weights_only=True)` (plain tensors and values only), its large tensors mapped from the
raw files beside it, and the folder is removed (the mappings outlive it).

The folders live in /dev/shm when it has room: GPU-sized outputs are GBs, and a RAM-backed folder
writes and maps them at memory speed (MTMC_VERIFY_TMPDIR chooses another place).
"""

from __future__ import annotations

import itertools
import os
import queue
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch

from mtmc.verify import sandbox, timing_gpu
from mtmc.verify.forkserver import NPROC_HEADROOM, Outcome, Worker
from mtmc.verify.transport import restore


class WorkerPool:
    def __init__(self, backend: str, envs: list[dict[str, str]], memory_gb: float | None,
                 cpu_threads: int | None, timing_groups: list[int | None] | None = None,
                 shared_compile_cache: bool = False, lanes: bool = False, gpu_lock: bool = False) -> None:
        """`timing_groups`: each worker's timing GPU in shared mode (timing_gpu.py), None: exclusive;
        with `gpu_lock` (one-GPU mode, timing_gpu.py) each worker's GPU, whose lock its jobs' kernels take.
        `shared_compile_cache`: every candidate job compiles into one Triton cache (trusted programs
        only: `compile_cache_folder`). `lanes`: each worker gets a twin on its GPU for trusted jobs
        alone, which forks its children lazily (overlap.py: `verifier.overlap_baselines`)."""
        self.root = Path(tempfile.mkdtemp(prefix="mtmc-verify-", dir=scratch_parent()))
        self.compile_cache = compile_cache_folder(self.root) if shared_compile_cache else None
        self.memory_gb = memory_gb
        self.gpu_lock = gpu_lock
        self.cpu_threads = cpu_threads
        self._numbers = itertools.count()
        # The workers' candidates all run as nobody and share its process count (RLIMIT_NPROC).
        self.nproc_headroom = NPROC_HEADROOM * len(envs)
        self.workers = [Worker(backend, env, self.root / f"worker{i}.log") for i, env in enumerate(envs)]
        self.lanes = {id(w): Worker(backend, env, self.root / f"lane{i}.log", lazy=True)
                      for i, (w, env) in enumerate(zip(self.workers, envs, strict=True))} if lanes else {}
        groups = timing_groups or [None] * len(envs)
        self.timing_locks = {id(w): None if g is None else timing_gpu.lock_file(self.root, g)
                             for w, g in zip(self.workers, groups, strict=True)}
        for worker in self.workers + list(self.lanes.values()):  # all launched first: they import
            worker.wait_ready()  # torch in parallel
        self._idle: queue.Queue[Worker] = queue.Queue()
        for worker in self.workers:
            self._idle.put(worker)

    def run(self, job: str, args: dict[str, Any], timeout_s: float) -> tuple[Outcome, dict[str, Any] | None]:
        """Run one job on a free worker: (how the child ended, its result when it finished)."""
        worker = self.take()
        try:
            return self.run_on(worker, job, args, timeout_s)
        finally:
            self.give(worker)

    def take(self) -> Worker:
        """A free worker, held (no other job runs on it, nor on its GPU in exclusive mode) until `give`."""
        return self._idle.get()

    def give(self, worker: Worker) -> None:
        self._idle.put(worker)

    def lane(self, worker: Worker) -> Worker | None:
        """`worker`'s twin on the same GPU for trusted jobs (None without lanes); use it only while
        holding `worker` (`take`), so that the two are one GPU's, held together."""
        return self.lanes.get(id(worker))

    def run_on(self, worker: Worker, job: str, args: dict[str, Any],
               timeout_s: float) -> tuple[Outcome, dict[str, Any] | None]:
        scratch = self.root / f"job{next(self._numbers)}"
        scratch.mkdir()
        lock = self.timing_locks.get(id(worker))
        args = with_gpu_lock(job, args, lock) if self.gpu_lock else with_timing_lock(job, args, lock)
        isolate = job in sandbox.UNTRUSTED_JOBS
        cache = str(self.compile_cache) if self.compile_cache and isolate else None
        # one-GPU mode: a job that does not take the lock itself runs whole under it (timing_gpu.py)
        held = lock if self.gpu_lock and job in timing_gpu.MAIN_LOCKED_JOBS else None
        try:
            with timing_gpu.exclusive(held):
                outcome = worker.run({"job": job, "args": args, "scratch": str(scratch),
                                      "memory_gb": self.memory_gb, "cpu_threads": self.cpu_threads,
                                      "nproc_headroom": self.nproc_headroom,
                                      "isolate": isolate,  # a candidate reads only:
                                      "readable": [args[k] for k in READABLE_ARGS if args.get(k)],
                                      "compile_cache": cache},
                                     timeout_s)
            result = None
            if outcome.status == "done":
                try:
                    result = restore(torch.load(outcome.result_path, weights_only=True), scratch)
                except Exception as err:  # a child that wrote something other than our result
                    outcome = Outcome("bad_result", f"unreadable result: {type(err).__name__}: {err}",
                                      outcome.log_tail, wall_s=outcome.wall_s)
            return outcome, result
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def data_dir(self, name: str) -> Path:
        """A folder that lives as long as the pool (reference inputs shared with candidates)."""
        path = self.root / name
        path.mkdir(exist_ok=True)
        return path

    @property
    def isolation(self) -> str:
        """The sandbox level every worker's candidate children get, in words (sandbox.describe)."""
        common = set(sandbox.LEVELS)
        for worker in self.workers:
            common &= set(worker.isolation)
        return sandbox.describe(sorted(common))

    @property
    def isolation_notes(self) -> str:
        return "; ".join(sorted({w.isolation_note for w in self.workers if w.isolation_note}))

    @property
    def restarts(self) -> int:
        return sum(w.restarts for w in self.workers + list(self.lanes.values()))

    def close(self) -> None:
        for worker in self.workers + list(self.lanes.values()):
            worker.close()
        shutil.rmtree(self.root, ignore_errors=True)


def with_timing_lock(job: str, args: dict[str, Any], lock: str | None) -> dict[str, Any]:
    """A timed job on a shared-mode worker gets its timing GPU's lock (the child times under it)."""
    return {**args, "timing_lock": lock} if lock and job in timing_gpu.TIMED_JOBS else args


def with_gpu_lock(job: str, args: dict[str, Any], lock: str | None) -> dict[str, Any]:
    """One-GPU mode: a trusted batch gets its GPU's lock, which it takes around its kernels only."""
    return {**args, "gpu_lock": lock} if lock and job in timing_gpu.CHILD_LOCKED_JOBS else args


def compile_cache_folder(root: Path) -> Path:
    """The Triton cache every candidate job of the pool shares (shared mode, for trusted programs).

    Why: a verdict's cost is mostly its Triton compiles, and the programs of a tree share most of
    their kernels (a step rewrites one kernel; siblings share autotune configs). Why only for trusted
    programs: a job can write any binary under any key here, so a hostile candidate could plant the
    kernel a later candidate loads; with private caches (the default) nothing a job compiles outlives
    it. The folder sits in the pool's folder (hidden from everything but the jobs, which get it
    mounted back writable) and goes with the pool. Jobs run as nobody: it must be theirs to write."""
    folder = root / "triton-cache"
    folder.mkdir(exist_ok=True)  # each job hands it to nobody before it drops to nobody (sandbox.py)
    return folder


READABLE_ARGS = ("inputs_path", "timing_lock")  # files a confined child may read (all else is hidden)
SHM = Path("/dev/shm")
SHM_MIN_FREE = 16 * 2**30  # below this a RAM-backed folder could fill up with one task's outputs


def scratch_parent() -> str | None:
    """Where the pool's folders go: $MTMC_VERIFY_TMPDIR, else /dev/shm with room, else the temp dir."""
    chosen = os.environ.get("MTMC_VERIFY_TMPDIR")
    if chosen:
        return chosen
    try:
        if SHM.is_dir() and os.access(SHM, os.W_OK) and shutil.disk_usage(SHM).free >= SHM_MIN_FREE:
            return str(SHM)
    except OSError:
        pass
    return None
