"""The spare: a child a fork-server worker forks ahead of its job (forkserver.py), and that child's
life until its job ends: its own process group and namespaces, none of the worker's descriptors,
CUDA started, then the job's limits, its log, its sandbox (sandbox.py) and the job function
(child.py's JOBS), its result written, and out with `os._exit`.
"""

from __future__ import annotations

import faulthandler
import os
import pickle
import resource
import signal
import sys
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from mtmc.verify import sandbox

HARNESS_ERROR_EXIT = 70  # a child whose harness code raised: a verifier bug, never the candidate's


def kill_group(pid: int | None) -> None:
    if pid is None:
        return
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


@dataclass
class Spare:
    """A child forked ahead of its job: in its own process group and namespaces (sandbox.py), CUDA
    already initialised on a GPU backend (~0.3-0.5 s that no verdict waits for), blocked until the
    job arrives on a pipe. With a PID namespace, `pid` is the process in between (see sandbox.py)."""

    pid: int
    job_fd: int
    namespace: sandbox.PidNamespace | None = None  # the PID namespace it is pid 2 of

    @classmethod
    def fork(cls, conn: Connection, init_cuda: bool, levels: list[str]) -> Spare:
        read_fd, write_fd = os.pipe()
        pid, namespace = sandbox.fork_into_pid_namespace() if "pidns" in levels else (os.fork(), None)
        if pid == 0:
            conn.close()  # the child must not be able to talk to the main process
            os.close(write_fd)
            _close_inherited_fds(keep=read_fd)
            os.setpgid(0, 0)  # own process group: the worker can kill everything the child starts
            die_with_parent()
            _enter_namespaces(levels)
            if init_cuda:
                _init_cuda()
            job = _read_job(read_fd)
            if job is None:  # discarded without a job
                os._exit(0)
            _child_main(job, levels)  # never returns
        os.close(read_fd)
        return cls(pid, write_fd, namespace)

    def send(self, job: dict[str, Any]) -> bool:
        """Hand the job over; False if the spare died while waiting (its exit is reaped)."""
        done, _ = os.waitpid(self.pid, os.WNOHANG)
        if done:
            os.close(self.job_fd)
            self.end_namespace()
            return False
        try:
            with os.fdopen(self.job_fd, "wb") as pipe:
                pipe.write(pickle.dumps(job))
            return True
        except BrokenPipeError:
            os.waitpid(self.pid, 0)
            self.end_namespace()
            return False

    def end_namespace(self) -> None:
        """After the spare's end: every process left in its PID namespace is killed."""
        if self.namespace is not None:
            self.namespace.end()

    def discard(self) -> None:
        try:
            os.close(self.job_fd)  # EOF: the spare exits
        except OSError:
            pass
        kill_group(self.pid)
        try:
            os.waitpid(self.pid, 0)
        except ChildProcessError:
            pass
        self.end_namespace()


def _close_inherited_fds(keep: int) -> None:
    """In a fresh spare: close every descriptor the worker held but stdin/stdout/stderr and `keep`
    (the job pipe). A fork copies them all, close-on-exec or not, and a candidate could read or
    write any of them (the worker's socket to the main process, a pipe of another job). Done
    before CUDA opens its device files, which the job needs; nothing in the worker wraps these
    numbers in an object that would close them again later (its Connection is closed first)."""
    os.closerange(3, keep)
    os.closerange(keep + 1, fd_ceiling())


def fd_ceiling() -> int:
    """One past the highest descriptor number this process can hold. An unlimited RLIMIT_NOFILE
    reads as -1 (RLIM_INFINITY), which as a bound would close nothing: the largest C int instead
    (CPython closes a range with one close_range system call on Linux 5.9 or later)."""
    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return soft if 0 < soft < 2**31 - 1 else 2**31 - 1


def _enter_namespaces(levels: list[str]) -> None:
    try:
        sandbox.enter_namespaces(levels)  # network and mount; the PID namespace is the worker's doing
    except BaseException:  # a level the worker promised: no job may run without it
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(HARNESS_ERROR_EXIT)


def _init_cuda() -> None:
    try:
        import torch
        import triton

        torch.cuda.init()
        # Triton's driver builds (or loads from the shared cache) its C helper here, as the trusted
        # spare: a confined candidate's Triton cache is its scratch folder, which starts empty.
        triton.runtime.driver.active.get_current_device()
    except Exception:  # a broken GPU shows up again, with its error, when the job uses it
        pass


def _read_job(fd: int) -> dict[str, Any] | None:
    with os.fdopen(fd, "rb") as pipe:
        data = pipe.read()
    return pickle.loads(data) if data else None  # from the worker, our parent: trusted


def _child_main(job: dict[str, Any], levels: list[str]) -> None:
    code = HARNESS_ERROR_EXIT
    scratch = Path(job["scratch"])
    log_path = scratch / "child.log"
    result_path = scratch / "result.pt"
    try:
        isolate = bool(job.get("isolate"))  # untrusted code runs in this job: confine it first
        cache = job.get("compile_cache")  # shared mode's, writable beside scratch (worker_pool.py)
        if isolate:  # mounts first: nothing may be open for writing yet (sandbox.hide_world)
            sandbox.hide_world(levels, scratch, job.get("readable", []), [cache] if cache else [])
        log_fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        faulthandler.enable(file=os.fdopen(os.dup(log_fd), "w"), all_threads=True)
        os.chdir(scratch)
        _apply_limits(job)
        import torch

        from mtmc.verify.child import JOBS
        from mtmc.verify.transport import offload
        if job.get("cpu_threads"):
            torch.set_num_threads(int(job["cpu_threads"]))
        if isolate:
            sandbox.drop_privileges(levels, scratch, cache)
            _limit_processes(job)
        result = JOBS[job["job"]](**job["args"])
        tmp = result_path.with_suffix(".tmp")
        torch.save(offload(result, scratch), tmp)
        os.replace(tmp, result_path)
        code = 0
    except BaseException:  # the harness itself failed: say so loudly in the log
        traceback.print_exc()
        sys.stderr.flush()
    finally:
        os._exit(code)


def _apply_limits(job: dict[str, Any]) -> None:
    """Core dumps off, CPU time and (CPU backend) address space capped. No RLIMIT_FSIZE: it caps
    each file, not their sum, and this same process writes the result's raw files afterwards,
    which are as large as the task's outputs (GBs); a cap on the scratch folder's total would need
    a size-limited mount, which the main process could not read the result from."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a segfaulting candidate must not dump GBs
    cpu_s = int(job["timeout_s"] * (os.cpu_count() or 1)) + 30  # backstop behind the wall clock
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 5))
    if job.get("memory_gb"):
        # Address space on top of what the fork already maps (torch alone maps several GB).
        # Off on GPUs: the CUDA driver reserves huge virtual ranges and fails under RLIMIT_AS.
        pages = int(Path("/proc/self/statm").read_text().split()[0])
        limit = pages * resource.getpagesize() + int(job["memory_gb"] * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _limit_processes(job: dict[str, Any]) -> None:
    """The candidate's cap on processes and threads (`_process_limit`), set once it runs as its
    final user: the hard limit too, so that it cannot raise it again."""
    if job.get("nproc_limit"):
        resource.setrlimit(resource.RLIMIT_NPROC, (job["nproc_limit"], job["nproc_limit"]))

def die_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (no orphaned workers or children)."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass
