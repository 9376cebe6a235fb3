"""Process isolation: what a candidate's process looks like from the inside, and the worker's
behaviour on hangs, crashes and its own death (the corpus covers each status end to end)."""

import os
import signal
import socket
import textwrap
import time
from multiprocessing.connection import Connection

import torch
from corpus_index import TASKS

from mtmc.program import Program
from mtmc.tasks import load_task
from mtmc.verify import Status, child, forkserver, format_verdict_table
from mtmc.verify.forkserver import clean_env

# With static checks off, this candidate inspects its own process and is only correct when the
# sandbox is as designed: no secrets (not even in /proc/self/environ), a scratch working directory,
# no core dumps, an address-space limit, the interpreter on, no GPU.
PROBE = textwrap.dedent('''
    import os
    import resource
    import torch
    import torch.nn as nn
    import triton
    import triton.language as tl


    @triton.jit
    def softmax_kernel(x_ptr, out_ptr, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=-float("inf"))
        num = tl.exp(x - tl.max(x, axis=0))
        tl.store(out_ptr + row * n_cols + cols, num / tl.sum(num, axis=0), mask=mask)


    def sandbox_problems():
        problems = [k for k in os.environ if "TOKEN" in k or "KEY" in k]
        with open("/proc/self/environ", "rb") as f:
            if b"MTMC_FAKE_API_TOKEN" in f.read():
                problems.append("secret in /proc/self/environ")
        if not os.path.basename(os.getcwd()).startswith("job"):
            problems.append("cwd " + os.getcwd())
        if resource.getrlimit(resource.RLIMIT_CORE)[0] != 0:
            problems.append("core dumps on")
        if resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY:
            problems.append("no address-space limit")
        if os.environ.get("TRITON_INTERPRET") != "1" or os.environ.get("CUDA_VISIBLE_DEVICES") != "":
            problems.append("interpreter/GPU environment")
        return problems


    class ModelNew(nn.Module):
        def forward(self, x):
            out = torch.empty_like(x)
            softmax_kernel[(x.shape[0],)](x, out, x.shape[1], BLOCK=triton.next_power_of_2(x.shape[1]))
            if sandbox_problems():
                raise RuntimeError("sandbox: " + ", ".join(sandbox_problems()))
            return out
''')


def test_clean_env_drops_secrets_and_applies_overrides():
    env = clean_env({"HOME": "/h", "OPENAI_API_KEY": "k", "hf_token": "t", "DB_PASSWORD": "p",
                     "AWS_SECRET_ACCESS_KEY": "s", "TRITON_INTERPRET": "1"},
                    {"TRITON_INTERPRET": None, "CUDA_VISIBLE_DEVICES": "3"})
    assert env == {"HOME": "/h", "CUDA_VISIBLE_DEVICES": "3"}


def test_candidate_process_is_sandboxed(unchecked_verifier):
    assert os.environ["MTMC_FAKE_API_TOKEN"]  # the test process does hold the secret
    verdict = unchecked_verifier.verify(load_task(TASKS / "softmax.py"), Program(PROBE))
    assert verdict.status == Status.OK, format_verdict_table(verdict)


def test_children_are_fresh_processes(unchecked_verifier):
    """A candidate that patches torch at import leaves nothing behind for the next candidate."""
    patcher = PROBE.replace("def sandbox_problems():", "torch.softmax = None\n\n\ndef sandbox_problems():")
    task = load_task(TASKS / "softmax.py")
    verdict = unchecked_verifier.verify(task, Program(patcher))
    assert verdict.status == Status.OK, format_verdict_table(verdict)
    checker = PROBE.replace("problems = [", "problems = [] if torch.softmax is not None else ['leak']\n"
                            "    problems += [")
    verdict = unchecked_verifier.verify(task, Program(checker))
    assert verdict.status == Status.OK, format_verdict_table(verdict)


def test_worker_is_reused_and_warm(verifier):
    pids = {w.pid for w in verifier.engine.pool.workers}
    task = load_task(TASKS / "pointwise.py")
    program = Program((TASKS.parent / "honest" / "pointwise.py").read_text() + "\n# again\n")
    verdict = verifier.verify(task, program)
    assert verdict.ok and verdict.wall_s < 10
    assert {w.pid for w in verifier.engine.pool.workers} == pids


def children_of(pid: int) -> list[int]:
    """The children of `pid` but the sandbox's PID-namespace init beside each spare: `cat`, or, in
    the moment before its exec, a process still named like the worker whose pid in its namespace is 1.
    Taken for the spare and killed, that one would leave the worker's next fork a namespace without
    init (ENOMEM): a suspected, unconfirmed cause of this test's one failure, on a loaded machine."""
    kids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = open(f"/proc/{entry}/stat").read()
                nspid = next(line for line in open(f"/proc/{entry}/status") if line.startswith("NSpid:"))
            except (OSError, StopIteration):
                continue
            inner = nspid.split()[1:]
            is_init = len(inner) > 1 and inner[-1] == "1"
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid and "(cat)" not in stat and not is_init:
                kids.append(int(entry))
    return kids


def wait_for_children(pid: int, n: int, timeout_s: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while len(kids := children_of(pid)) != n and time.monotonic() < deadline:
        time.sleep(0.05)
    return kids


def test_a_spare_child_waits_for_the_next_job_and_its_death_loses_nothing(verifier):
    task = load_task(TASKS / "pointwise.py")
    source = (TASKS.parent / "honest" / "pointwise.py").read_text()
    assert verifier.verify(task, Program(source + "\n# spare 1\n")).ok
    worker = verifier.engine.pool.workers[0]
    spares = wait_for_children(worker.pid, 1)
    assert len(spares) == 1  # forked once the last job's outcome was sent, waiting for the next
    os.kill(spares[0], signal.SIGKILL)
    while open(f"/proc/{spares[0]}/stat").read().rsplit(")", 1)[1].split()[0] != "Z":
        time.sleep(0.01)  # dead, not yet reaped: the worker must notice before handing it a job
    verdict = verifier.verify(task, Program(source + "\n# spare 2\n"))
    assert verdict.ok, format_verdict_table(verdict)
    assert worker.pid == verifier.engine.pool.workers[0].pid  # handled inside the worker
    assert len(wait_for_children(worker.pid, 1)) == 1  # the dead spare reaped, a new one waiting


def test_a_spare_drops_every_descriptor_its_worker_held(tmp_path, monkeypatch):
    """A spare forked from this test process (standing in for a worker that holds files, sockets
    and pipes: pytest's captures, a socket pair, a file opened for writing) runs a job that lists
    its descriptors: stdin (the worker's is /dev/null), and its own log (stdout, stderr, the crash
    handler's copy) only."""
    worker_file = os.open(tmp_path / "worker-only.txt", os.O_WRONLY | os.O_CREAT)
    ours, theirs = socket.socketpair()
    monkeypatch.setitem(child.JOBS, "list_fds", lambda: {
        "fds": {int(fd): os.readlink(f"/proc/self/fd/{fd}") for fd in os.listdir("/proc/self/fd")
                if os.path.exists(f"/proc/self/fd/{fd}")}})
    scratch = tmp_path / "job"
    scratch.mkdir()
    spare = forkserver._Spare.fork(Connection(theirs.detach()), init_cuda=False, levels=[])
    try:
        assert spare.send({"job": "list_fds", "args": {}, "scratch": str(scratch), "timeout_s": 30.0})
        _, status = os.waitpid(spare.pid, 0)
    finally:
        os.close(worker_file)
        ours.close()
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, (scratch / "child.log").read_text()
    fds = torch.load(scratch / "result.pt", weights_only=True)["fds"]
    log = str(scratch / "child.log")
    fds.pop(0)
    assert set(fds.values()) == {log}, fds


def test_an_unlimited_descriptor_limit_still_closes_every_descriptor(monkeypatch):
    """RLIMIT_NOFILE unlimited reads as -1: as the range's end it would close nothing."""
    import resource

    monkeypatch.setattr(resource, "getrlimit", lambda _: (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    assert forkserver._fd_ceiling() == 2**31 - 1
    monkeypatch.setattr(resource, "getrlimit", lambda _: (1024, 4096))
    assert forkserver._fd_ceiling() == 1024
