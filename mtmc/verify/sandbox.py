"""Isolation of candidate code: Linux namespaces and an unprivileged user around the job child.

A candidate's child (forkserver.py) is, before any candidate code runs:

    netns     a network namespace of its own: no interface but a loopback that is down
    pidns     pid 2 of a PID namespace of its own, below its init: every process it starts (setsid,
              double fork, daemon) dies with the init when the job ends; it sees no other process
    readonly  a mount namespace in which every mount is read-only, the pool's folder (other jobs,
              the reference data, the worker logs) is hidden under an empty tmpfs, and only its
              scratch folder, its inputs file and (shared mode) the pool's Triton cache mounted back
    nobody    uid/gid 65534, no supplementary groups, no capabilities (bounding set dropped too),
              PR_SET_NO_NEW_PRIVS

How: the spare child unshares the namespaces as soon as it is forked (`enter_namespaces`); a new
PID namespace takes the caller's next children, not the caller. It spawns the namespace's init (a
small program), forks the job process (pid 2) and becomes a small waiter that passes the job's end
on. The job process initialises CUDA and waits for its job. The job arrives: `hide_world` mounts,
and `drop_privileges` points HOME, TMPDIR and the Triton cache into scratch and drops to nobody.
Device files stay usable: a read-only mount refuses writes to files and folders, not to
character devices such as /dev/nvidia*.

The worker probes once at start-up which levels this machine grants (`probe_levels`, in a throwaway
child that also checks that they hold: a write outside scratch fails, 127.0.0.1 is unreachable, and
so on). Every later job must reach that level or it refuses to run (a harness error, never a silent
downgrade), and every Verdict names the level (`describe`). Trusted jobs (reference, baseline,
probe) share the namespaces but keep root and a writable filesystem. The system calls and /proc
reads underneath are linux.py's.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import os
import shutil
import signal
import socket
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mtmc.verify.linux import (
    CLONE_NEWNET,
    CLONE_NEWNS,
    CLONE_NEWPID,
    MS_BIND,
    MS_NODEV,
    MS_NOEXEC,
    MS_NOSUID,
    MS_PRIVATE,
    MS_REC,
    PR_CAPBSET_DROP,
    PR_SET_DUMPABLE,
    PR_SET_NO_NEW_PRIVS,
    PR_SET_PDEATHSIG,
    SandboxError,
    check_call,
    children_of,
    effective_caps,
    libc,
    mount,
    process_state,
    set_read_only,
    tasks_of,  # noqa: F401  (re-exported: the worker counts a user's tasks through this module)
)

LEVELS = ("netns", "pidns", "readonly", "nobody")
UNTRUSTED_JOBS = frozenset({"candidate"})
NOBODY = 65534
DISABLE_ENV = "MTMC_VERIFY_SANDBOX"  # "0": rlimits only (for measuring the sandbox's cost)


def describe(levels: list[str] | tuple[str, ...]) -> str:
    """The verdict's wording: "netns+pidns+readonly+nobody", or "rlimits-only"."""
    return "+".join(level for level in LEVELS if level in levels) or "rlimits-only"


def wanted() -> bool:
    return os.environ.get(DISABLE_ENV, "1") != "0"


# ------------------------------------------------------------------------------------------------
# namespaces: the worker forks the spare into a new PID namespace; the spare makes the others
# ------------------------------------------------------------------------------------------------
@dataclass
class PidNamespace:
    """A PID namespace the worker made for one spare: its init and the pipe that keeps it alive."""

    init: int
    hold_fd: int

    def live_processes(self) -> int:
        """Processes alive in the namespace besides its init: what the job left running. Counted
        by the worker from the host's /proc (outside the candidate's reach: a candidate that
        patches a count in its own process cannot hide a stray). Every process of a PID namespace
        descends from its init (orphans are re-parented to it, never to a reaper outside), so the
        walk down from init finds them all; zombies (init is `cat`, it reaps nobody) are dead."""
        count, stack = 0, children_of(self.init)
        while stack:
            pid = stack.pop()
            if process_state(pid) not in ("Z", "X", ""):
                count += 1
            stack += children_of(pid)
        return count

    def end(self) -> None:
        """Close init's pipe and reap it: init's exit returns only once the kernel has killed every
        process left in the namespace, so afterwards nothing the job started is running."""
        try:
            os.close(self.hold_fd)
        except OSError:
            pass
        try:
            os.waitpid(self.init, 0)
        except ChildProcessError:
            pass  # reaped already (the worker's stray sweep)


def fork_into_pid_namespace() -> tuple[int, PidNamespace | None]:
    """os.fork() whose child is pid 2 of a new PID namespace (the caller stays where it is).

    A new PID namespace takes the caller's next children: the first, its init, is `cat` spawned
    (not forked: no copy of the worker's GBs of mappings) reading a pipe the caller holds, so that
    it lives until `PidNamespace.end`. The job is pid 2, an ordinary process (Linux ignores the
    signals a pid 1 sends itself, which would change how a candidate's crash reads). Returns
    (pid, namespace) in the caller and (0, None) in the child."""
    own = os.open("/proc/self/ns/pid", os.O_RDONLY)
    try:
        check_call(libc.unshare(CLONE_NEWPID), "unshare(pid)")
        namespace = _spawn_init()
        pid = os.fork()
    except BaseException:
        _back_to(own)
        raise
    if pid == 0:
        os.close(namespace.hold_fd)
        os.close(own)
        return 0, None
    _back_to(own)
    return pid, namespace


def _spawn_init() -> PidNamespace:
    """Init holds only its pipe and /dev/null: the worker's other descriptors are close-on-exec
    (forkserver.serve), and its log is not init's to write (a root candidate without the "nobody"
    level could take any descriptor init holds, with pidfd_getfd)."""
    hold_read, hold_write = os.pipe()
    try:
        init = os.posix_spawn(INIT[0], INIT, {}, file_actions=[
            (os.POSIX_SPAWN_DUP2, hold_read, 0), (os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0),
            (os.POSIX_SPAWN_OPEN, 2, "/dev/null", os.O_WRONLY, 0)])
    finally:
        os.close(hold_read)
    return PidNamespace(init, hold_write)


def _back_to(own_fd: int) -> None:
    """The caller's next children go to its own PID namespace again."""
    try:
        check_call(libc.setns(own_fd, CLONE_NEWPID), "setns(pid)")
    finally:
        os.close(own_fd)


INIT = [shutil.which("cat") or "/bin/cat"]


def enter_namespaces(levels: list[str]) -> None:
    """In the spare, before CUDA and before its job: its own network and mount namespaces, and with
    "pidns" (forked into one by the worker) a /proc that shows only that namespace's processes."""
    flags = CLONE_NEWNET if "netns" in levels else 0
    flags |= CLONE_NEWNS if {"readonly", "pidns"} & set(levels) else 0
    if not flags:
        return
    check_call(libc.unshare(flags), "unshare")
    if flags & CLONE_NEWNS:  # nothing mounted in here propagates back to the host
        mount(None, "/", None, MS_REC | MS_PRIVATE)
    if "pidns" in levels:
        mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)


# ------------------------------------------------------------------------------------------------
# confinement: in the job child, after the job arrived, before any candidate code
# ------------------------------------------------------------------------------------------------
def hide_world(levels: list[str], scratch: Path, readable: list[str], writable: list[str] = ()) -> None:
    """The read-only world with the pool's folder hidden (level "readonly"), in a mount namespace of
    the job's own. Its own, because Linux refuses to make a mount read-only while a file on it is
    open for writing, and a fresh namespace's mounts have no writers yet (files opened before, by
    CUDA or Triton, hold the older mounts); and because these mounts must not pull the Python
    install from under the waiters, which may still be starting up. Nothing may be opened for
    writing between the two. `writable`: pool folders beside scratch the job writes too."""
    if "readonly" in levels:
        check_call(libc.unshare(CLONE_NEWNS), "unshare(mount)")
        _read_only_world(scratch.resolve(), [Path(p).resolve() for p in readable],
                         [Path(p).resolve() for p in writable])


def drop_privileges(levels: list[str], scratch: Path, compile_cache: str | None = None) -> None:
    """Private HOME/TMPDIR/caches in scratch (the Triton cache in `compile_cache` when given), then
    nobody (level "nobody"). Raises SandboxError when a promised level cannot be set up."""
    scratch = scratch.resolve()
    _private_home(scratch)
    if compile_cache:  # shared mode's, handed to nobody too (worker_pool.compile_cache_folder)
        os.environ["TRITON_CACHE_DIR"] = compile_cache
    if "nobody" in levels:
        for path in (scratch, scratch / "home", scratch / "tmp", Path(compile_cache or scratch)):
            os.chown(path, NOBODY, NOBODY)
        _become_nobody()


def _read_only_world(scratch: Path, readable: list[Path], writable: list[Path] = ()) -> None:
    """Every mount read-only; folders hidden under empty tmpfs mounts with only what the job needs
    mounted back at the same paths: the pool's folder (other jobs, reference data, worker logs)
    keeps the job's scratch and `writable` folders (writable) and inputs file; a folder nobody may
    not enter on the way to the Python install (such as /root) keeps that install."""
    if any(p.parent != scratch.parent for p in writable):  # elsewhere it would stay read-only
        raise SandboxError(errno.EINVAL, f"writable folders must sit beside the scratch folder: {writable}")
    hides: dict[Path, list[tuple[Path, bool]]] = {scratch.parent: [(scratch, True)]}
    hides[scratch.parent] += [(p, True) for p in writable]
    hides[scratch.parent] += [(p, False) for p in readable if p.is_relative_to(scratch.parent)]
    for closed, entry in _interpreter_hides():
        hides.setdefault(closed, []).append((entry, False))
    kept = [(os.open(path, os.O_PATH), path, writable) for entries in hides.values()
            for path, writable in entries]  # opened before anything is hidden
    try:
        set_read_only("/", recursive=True)
        for folder in sorted(hides, key=lambda p: len(p.parts)):
            mount("tmpfs", str(folder), "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=755")
        for fd, path, writable in kept:
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.is_dir() or os.path.isdir(f"/proc/self/fd/{fd}"):
                path.mkdir(exist_ok=True)
            else:
                path.touch()
            mount(f"/proc/self/fd/{fd}", str(path), None, MS_BIND)
            set_read_only(str(path), recursive=False, read_only=not writable)
        for folder in hides:
            set_read_only(str(folder), recursive=False)
    finally:
        for fd, _, _ in kept:
            os.close(fd)
    os.chdir(scratch)  # the old working directory is the hidden, read-only mount


@functools.cache  # worked out once in the worker (probe_levels), inherited by every fork
def _interpreter_hides() -> tuple[tuple[Path, Path], ...]:
    """(closed folder, its entry to keep) for each folder nobody may not enter on the way to the
    folders the candidate's Python reads from: the interpreter's prefixes and sys.path."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    paths |= {p for p in sys.path if p and os.path.isdir(p)}
    found = []
    for path in sorted({Path(p).resolve() for p in paths}):
        closed = _closed_ancestor(path)
        if closed is not None and closed not in found:
            found.append(closed)
    return tuple(found)


def _closed_ancestor(path: Path) -> tuple[Path, Path] | None:
    """The first folder above `path` that others may not enter, and its entry on the way to `path`."""
    for folder in reversed(path.parents):  # "/" first
        if not os.stat(folder).st_mode & 0o001:
            return folder, folder / path.relative_to(folder).parts[0]
    return None


def _private_home(scratch: Path) -> None:
    """HOME, TMPDIR and every cache a library writes into point into scratch (the only writable place)."""
    home, tmp = scratch / "home", scratch / "tmp"
    home.mkdir(exist_ok=True)
    tmp.mkdir(exist_ok=True)
    os.environ.update(HOME=str(home), TMPDIR=str(tmp), XDG_CACHE_HOME=str(home / ".cache"),
                      TRITON_HOME=str(home), TRITON_CACHE_DIR=str(home / ".triton" / "cache"),
                      TORCHINDUCTOR_CACHE_DIR=str(tmp / "inductor"))
    tempfile.tempdir = None  # gettempdir() re-reads TMPDIR


def _become_nobody() -> None:
    for cap in range(64):  # the bounding set: nothing can be regained, even through an exec
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != errno.EINVAL:
            raise SandboxError(ctypes.get_errno(), f"dropping capability {cap}")
    os.setgroups([])
    os.setresgid(NOBODY, NOBODY, NOBODY)
    os.setresuid(NOBODY, NOBODY, NOBODY)  # clears the permitted and effective capabilities
    check_call(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
    check_call(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL), "prctl(PDEATHSIG)")  # a uid change clears it
    check_call(libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "prctl(DUMPABLE)")  # else /proc/self is root's
    if os.getuid() != NOBODY or effective_caps() != 0:
        raise SandboxError(errno.EPERM, "still privileged after dropping to nobody")


# ------------------------------------------------------------------------------------------------
# the worker's start-up probe
# ------------------------------------------------------------------------------------------------
def probe_levels() -> tuple[list[str], str]:
    """The levels this machine grants, each tried in a throwaway child and checked to hold, and a
    note on those refused (why). Runs in the worker at start-up (~50 ms)."""
    if not wanted():
        return [], f"{DISABLE_ENV}=0"
    _interpreter_hides()  # here, so that every fork inherits it
    if try_levels(list(LEVELS))[0]:  # the usual case: one child
        return list(LEVELS), ""
    granted, notes = [], []
    for level in LEVELS:
        ok, note = try_levels([*granted, level])
        if ok:
            granted.append(level)
        else:
            notes.append(f"{level}: {note}")
    return granted, "; ".join(notes)


def try_levels(levels: list[str]) -> tuple[bool, str]:
    """Set up `levels` in a throwaway child and check that they hold: (True, "ok"), or (False, why)."""
    try:
        base = _probe_folder()
    except OSError as err:
        return False, f"no probe folder: {err}"
    read_fd, write_fd = os.pipe()
    try:
        pid, namespace = fork_into_pid_namespace() if "pidns" in levels else (os.fork(), None)
    except OSError as err:
        for fd in (read_fd, write_fd):
            os.close(fd)
        shutil.rmtree(base, ignore_errors=True)
        return False, f"{type(err).__name__}: {err}"
    if pid == 0:
        os.close(read_fd)
        message = "ok"
        try:
            enter_namespaces(levels)
            hide_world(levels, base / "job", [str(base / "ref" / "inputs.pt")])
            drop_privileges(levels, base / "job")
            message = leaks(levels, base) or "ok"
        except BaseException as err:
            message = f"{type(err).__name__}: {err}"
        os.write(write_fd, message.encode()[:400])
        os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        message = pipe.read().decode(errors="replace")
    os.waitpid(pid, 0)
    if namespace is not None:
        namespace.end()
    shutil.rmtree(base, ignore_errors=True)
    return message == "ok", message or "the probe child died"


def _probe_folder() -> Path:
    """A pool folder in small: job/ (scratch), ref/inputs.pt (readable), secret (to be hidden)."""
    base = Path(tempfile.mkdtemp(prefix="mtmc-sandbox-probe-"))
    (base / "job").mkdir()
    (base / "ref").mkdir()
    (base / "ref" / "inputs.pt").write_text("inputs")
    (base / "secret").write_text("reference outputs")
    return base


def leaks(levels: list[str], base: Path) -> str:
    """'' when every level in `levels` holds in this process, else what leaked. `base` is a probe's
    folder: job/ (its scratch), ref/inputs.pt (readable) and secret (hidden with the pool)."""
    job = base / "job"
    (job / "probe.txt").write_text("scratch is writable")
    if "netns" in levels and _can_connect("127.0.0.1"):
        return "127.0.0.1 reachable"
    if "pidns" in levels and (os.getpid() != 2 or len([p for p in os.listdir("/proc") if p.isdigit()]) != 2):
        return f"pid {os.getpid()}, not 2 under a namespace's init"
    if "readonly" in levels:
        if (base / "secret").exists():
            return "the pool folder is visible"
        if (base / "ref" / "inputs.pt").read_text() != "inputs":
            return "the inputs file is unreadable"
        for outside in (base / "ref" / "x", Path("/tmp/mtmc-probe-x"), Path(__file__).with_name(".probe-x")):
            if _can_write(outside):
                return f"{outside} is writable"
    if "nobody" in levels and (os.getuid() != NOBODY or effective_caps() != 0):
        return "still privileged"
    try:
        Path(os.__file__).read_bytes()  # the standard library (lazy imports) stays readable
    except OSError as err:
        return f"cannot read the Python install: {err}"
    return ""


def _can_connect(host: str) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.2)
        return sock.connect_ex((host, 9)) not in (errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EACCES)


def _can_write(path: Path) -> bool:
    try:
        path.write_text("x")
    except OSError:
        return False
    path.unlink()
    return True

