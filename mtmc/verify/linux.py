"""The Linux system calls and /proc reads the sandbox (sandbox.py) is built from: namespaces and
mounts through libc, capabilities, process trees and per-user task counts."""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

CLONE_NEWNS = 0x00020000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 8, 32, 4096, 16384, 1 << 18
SYS_MOUNT_SETATTR = 442  # the same number on every architecture (added in Linux 5.12)
AT_FDCWD, AT_RECURSIVE, MOUNT_ATTR_RDONLY = -100, 0x8000, 0x1
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 4, 24, 38

libc = ctypes.CDLL(None, use_errno=True)


class SandboxError(OSError):
    """A level this worker promised could not be set up: the job must not run."""


class MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def effective_caps() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("CapEff:"):
            return int(line.split()[1], 16)
    return -1


def children_of(pid: int) -> list[int]:
    """Children of every thread of `pid` (none once it is gone)."""
    children = []
    try:
        for task in os.scandir(f"/proc/{pid}/task"):
            try:
                children += [int(c) for c in Path(task.path, "children").read_text().split()]
            except OSError:
                pass
    except OSError:
        pass
    return children


def process_state(pid: int) -> str:
    """The process's state letter (R, S, Z, ...), '' when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


def tasks_of(uid: int) -> int:
    """Threads of every process whose real user is `uid`: what RLIMIT_NPROC counts for it (Linux
    counts tasks, threads included, per real user id, machine-wide). Read in the worker, which
    sees the host's /proc (a job in a PID namespace sees only its own)."""
    count = 0
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            status = Path(entry.path, "status").read_text()
        except OSError:
            continue  # gone meanwhile
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields["Uid"].split()[0]) == uid:
            count += int(fields.get("Threads", "1"))
    return count


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    args = [None if value is None else value.encode() for value in (source, target, fstype)]
    options = None if data is None else data.encode()
    check_call(libc.mount(*args, ctypes.c_ulong(flags), options), f"mount {target}")


def set_read_only(path: str, recursive: bool, read_only: bool = True) -> None:
    attr = MountAttr(attr_set=MOUNT_ATTR_RDONLY if read_only else 0,
                      attr_clr=0 if read_only else MOUNT_ATTR_RDONLY)
    flags = AT_RECURSIVE if recursive else 0
    result = libc.syscall(SYS_MOUNT_SETATTR, AT_FDCWD, path.encode(), flags, ctypes.byref(attr),
                           ctypes.sizeof(attr))
    check_call(result, f"mount_setattr {path}")


def check_call(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise SandboxError(code, f"{what}: {os.strerror(code)}")
