"""Process isolation: a warm fork-server worker that runs every job in a fresh forked child.

    main process ──socketpair──► worker (python -c serve, clean env, torch+triton imported,
                                          CUDA never initialised; a subreaper)
                                    └─ os.fork() per job ─► child: limits, scratch cwd, runs one
                                                            job function, writes result.pt, _exit

A candidate's child is sandboxed before any candidate code runs (sandbox.py: its own network,
PID and mount namespaces, a read-only view but for its scratch folder, user nobody, a cap on its
processes, none of the worker's file descriptors); the worker probes at start-up which of these
the machine grants, and counts and kills whatever a child left running.

The child for the next job is forked as soon as the last one ends (a "spare"): it initialises
CUDA and then waits on a pipe for its job, so a verdict does not wait for CUDA's start (spare.py:
the spare and its life until the job ends).

Why this shape: a cold Python with torch costs ~4 s; a fork of a process that already imported
torch and triton costs ~0.5 s on a GPU (CUDA init in the child) and ~20 ms on the CPU, and every
candidate still gets a process of its own, so a crash, hang, illegal memory access or monkey-patch
dies with it. CUDA must only ever be initialised in children: a forked CUDA context is unusable.

The worker is started with subprocess (not multiprocessing) so that it gets a scrubbed environment
at exec time (secrets are gone even from /proc/<pid>/environ) and does not re-import the caller's
__main__. Results travel as files (torch.save in the child, torch.load(weights_only=True) in the
main process), never as pickles of objects the candidate could have shaped; large tensors go
beside it as raw files (`mtmc/verify/transport.py`).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from mtmc.verify import sandbox
from mtmc.verify.spare import HARNESS_ERROR_EXIT, Spare, die_with_parent, fd_ceiling, kill_group

# Environment variables whose names contain one of these never reach a worker.
SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE",
                  "PRIVATE", "SESSION")
READY_TIMEOUT_S = 300.0  # importing torch + triton on a busy machine
GRACE_S = 30.0  # on top of the job timeout, for the worker itself to answer
NPROC_HEADROOM = 512  # tasks (threads and processes) one candidate may add (see _process_limit)
_Spare, _fd_ceiling = Spare, fd_ceiling  # their names before spare.py, which the tests use


def clean_env(base: dict[str, str], overrides: dict[str, str | None]) -> dict[str, str]:
    """`base` without secrets, with `overrides` applied (a None value removes the variable)."""
    env = {k: v for k, v in base.items() if not any(m in k.upper() for m in SECRET_MARKERS)}
    for key, value in overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


@dataclass
class Outcome:
    """How one child ended. `result_path` holds its result when `status` is "done"."""

    status: str  # done | timeout | signal | exit | harness_error | worker_died | worker_hung
    detail: str = ""  # signal name, exit code or error text
    log_tail: str = ""  # the child's stdout/stderr (faulthandler stacks land here on a crash)
    result_path: str | None = None
    wall_s: float = 0.0
    strays: int = 0  # processes the child left behind, found and killed by the worker afterwards


# ------------------------------------------------------------------------------------------------
# main-process side
# ------------------------------------------------------------------------------------------------
class Worker:
    """Handle on one fork-server process; restarts it when it dies or hangs."""

    def __init__(self, backend: str, env: dict[str, str], log_path: Path, lazy: bool = False) -> None:
        """`lazy`: fork each job's child when the job comes, not ahead of it (the overlap lane,
        overlap.py: nothing of its own touches the GPU once its job has ended)."""
        self.backend = backend
        self.lazy = lazy
        self.env = env
        self.log_path = log_path
        self.restarts = 0
        self.isolation: list[str] = []  # the sandbox levels its children get (sandbox.py)
        self.isolation_note = ""  # why the others were refused
        self.proc: subprocess.Popen | None = None
        self.conn: Connection | None = None
        self.launch()

    def launch(self) -> None:
        """Start the process; `wait_ready` blocks until it has imported torch and triton."""
        ours, theirs = socket.socketpair()
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", "import sys; from mtmc.verify.forkserver import serve, done; "
                 "serve(int(sys.argv[1]), sys.argv[2], sys.argv[3] == 'lazy'); done()", str(theirs.fileno()),
                 self.backend, "lazy" if self.lazy else "spare"],
                env=self.env, pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=log,
                stderr=log, start_new_session=True)
        theirs.close()
        self.conn = Connection(ours.detach())

    def wait_ready(self) -> None:
        if not self.conn.poll(READY_TIMEOUT_S):
            self._kill()
            raise RuntimeError(f"verifier worker did not start in {READY_TIMEOUT_S:.0f} s; "
                               f"log: {self.log_path}")
        try:
            ready = self.conn.recv()
            self.isolation, self.isolation_note = ready["isolation"], ready["isolation_note"]
        except EOFError:
            raise RuntimeError(f"verifier worker died while starting; log tail:\n"
                               f"{_tail(self.log_path)}") from None

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    def run(self, job: dict[str, Any], timeout_s: float) -> Outcome:
        """Run `job` in a fresh child of this worker. Never raises for what the child does."""
        job = {**job, "timeout_s": timeout_s}
        try:
            self.conn.send(job)
        except OSError:
            self._restart()
            return Outcome("worker_died", "verifier worker was gone before the job started")
        child_pid = None
        deadline = time.monotonic() + timeout_s + GRACE_S
        while True:
            remaining = deadline - time.monotonic()
            try:
                if remaining <= 0 or not self.conn.poll(remaining):
                    kill_group(child_pid)
                    self._restart()
                    return Outcome("worker_hung",
                                   f"verifier worker gave no answer in {timeout_s + GRACE_S:.0f} s")
                message = self.conn.recv()
            except (EOFError, OSError):
                kill_group(child_pid)
                code = self.proc.poll()
                self._restart()
                return Outcome("worker_died",
                               f"verifier worker died (exit status {code}) while running the job")
            if "child_pid" in message:
                child_pid = message["child_pid"]
                continue
            return Outcome(**message)

    def _restart(self) -> None:
        self._kill()
        self.restarts += 1
        self.launch()
        self.wait_ready()

    def _kill(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        if self.proc is not None and self.proc.poll() is None:
            kill_group(self.proc.pid)
            self.proc.wait()

    def close(self) -> None:
        if self.conn is not None and self.proc is not None and self.proc.poll() is None:
            try:
                self.conn.send(None)
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._kill()


def _tail(path: Path, chars: int = 3000) -> str:
    try:
        return path.read_bytes()[-chars:].decode(errors="replace")
    except OSError:
        return ""


# ------------------------------------------------------------------------------------------------
# worker side
# ------------------------------------------------------------------------------------------------
def serve(fd: int, backend: str, lazy: bool = False) -> None:
    """The worker's main loop: import once, then fork one child per job until told to stop (`lazy`:
    each when its job comes; else a spare ahead of it)."""
    die_with_parent()
    _become_subreaper()
    if backend == "interpreter":
        os.environ["TRITON_INTERPRET"] = "1"  # read when @triton.jit runs, so before any kernel
    else:
        os.environ.pop("TRITON_INTERPRET", None)
    os.set_inheritable(fd, False)  # passed to us as inheritable: no program we start may hold it
    conn = Connection(fd)
    import torch  # noqa: F401  (imported once here so that children start warm)
    import torch._dynamo  # noqa: F401  (its import re-wraps torch functions: do it before any snapshot)
    import triton  # noqa: F401
    import triton.language  # noqa: F401

    import mtmc.verify.child  # noqa: F401
    from mtmc.verify.interpreter import autotune_on_the_cpu

    if backend == "interpreter":
        autotune_on_the_cpu()
    levels, note = sandbox.probe_levels()
    conn.send({"ready": os.getpid(), "isolation": levels, "isolation_note": note})
    init_cuda = backend == "cuda"
    spare = None if lazy else Spare.fork(conn, init_cuda, levels)
    try:
        while True:
            try:
                job = conn.recv()
            except EOFError:
                return
            if job is None:
                return
            outcome = _run_in_child(job, conn, spare or Spare.fork(conn, init_cuda, levels), levels)
            conn.send(outcome.__dict__)
            # the next child warms up while the main process judges (a lazy worker's waits for its job)
            spare = None if lazy else Spare.fork(conn, init_cuda, levels)
    finally:
        if spare is not None:
            spare.discard()


def done() -> None:
    """The worker's end once `serve` returned: its output flushed, then out without the
    interpreter's teardown of torch and triton (1.4 s of every pool's close on a CPU machine)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _run_in_child(job: dict[str, Any], conn: Connection, spare: Spare, levels: list[str]) -> Outcome:
    start = time.monotonic()
    if job.get("isolate"):
        job = {**job, "nproc_limit": _process_limit(job, levels)}
    if not spare.send(job):  # the spare died waiting (killed from outside): fork a cold one
        spare = Spare.fork(conn, init_cuda=False, levels=levels)
        spare.send(job)
    pid = spare.pid
    conn.send({"child_pid": pid})
    status = _wait(pid, job["timeout_s"])
    # Counted here, after the job's end and outside its reach (its own count could be patched):
    # every process still alive in its PID namespace is one it left running.
    left = spare.namespace.live_processes() if spare.namespace is not None else 0
    kill_group(pid)  # anything the child left behind in its process group...
    spare.end_namespace()  # ...or in its PID namespace...
    outcome = _ended(job, status, time.monotonic() - start)
    # ...or elsewhere (setsid, double fork; no PID namespace): our orphans
    outcome.strays = left + _kill_strays()
    return outcome


def _process_limit(job: dict[str, Any], levels: list[str]) -> int:
    """RLIMIT_NPROC for a candidate: the tasks its user has now, plus the pool's headroom.

    Linux counts RLIMIT_NPROC per real user, machine-wide, threads included, so the limit is the
    user's current count (other workers' candidates run as nobody too) plus room for what one
    candidate honestly starts (torch's and CUDA's threads, Triton's compiler processes), times the
    workers that share the user (`nproc_headroom`, from the pool). A fork bomb stops there.
    Under the "nobody" level the user is nobody. Without it the job keeps the worker's user: an
    unprivileged verifier's candidate is still bound (the count then includes the verifier's own
    processes), but root is not: Linux ignores RLIMIT_NPROC for uid 0 and for holders of
    CAP_SYS_RESOURCE or CAP_SYS_ADMIN. A root candidate's processes are then bounded only by its
    timeout and killed with its PID namespace (or by the stray sweep) afterwards."""
    uid = sandbox.NOBODY if "nobody" in levels else os.getuid()
    return sandbox.tasks_of(uid) + int(job.get("nproc_headroom") or NPROC_HEADROOM)


def _ended(job: dict[str, Any], status: int | None, wall: float) -> Outcome:
    """How the child ended, from its wait status (None: killed at the deadline)."""
    scratch = Path(job["scratch"])
    log_path = scratch / "child.log"
    result_path = scratch / "result.pt"
    tail = _tail(log_path)
    if status is None:
        return Outcome("timeout", f"{job['timeout_s']:.0f} s", tail, wall_s=wall)
    if os.WIFSIGNALED(status):
        return Outcome("signal", signal.Signals(os.WTERMSIG(status)).name, tail, wall_s=wall)
    code = os.WEXITSTATUS(status)
    if code == HARNESS_ERROR_EXIT:
        return Outcome("harness_error", "the verifier's own code raised in the child", tail, wall_s=wall)
    if code != 0 or not result_path.is_file():
        return Outcome("exit", f"exit code {code}", tail, wall_s=wall)
    return Outcome("done", "", tail, str(result_path), wall)


def _wait(pid: int, timeout_s: float) -> int | None:
    """The child's wait status, or None after killing it at the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() > deadline:
            kill_group(pid)
            os.waitpid(pid, 0)
            return None
        time.sleep(0.005)


def _kill_strays() -> int:
    """Kill and reap every child of this worker: between jobs it has none of its own, so any child is
    a process a job started that outlived it (orphans come to the worker, a subreaper). Repeated
    until none is left, since one may fork while the others die."""
    killed = 0
    for _ in range(100):
        pids = _children()
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                killed += 1
            except (ProcessLookupError, ChildProcessError):
                pass
    return killed


def _children() -> list[int]:
    pids = []
    for task in Path("/proc/self/task").iterdir():
        try:
            pids += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            pass
    return pids


def _become_subreaper() -> None:
    """Orphans of our children (a setsid'd or double-forked process) become our children, not
    init's, so `_kill_strays` finds them whatever process group or session they moved to."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(36, 1)  # PR_SET_CHILD_SUBREAPER
