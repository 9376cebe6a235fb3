"""The candidate's sandbox (mtmc/verify/sandbox.py), end to end on the CPU: candidates that try to
write outside their folder, reach the network, leave processes behind or edit the verifier fail with
the reason in the verdict, and nothing they made is left afterwards. Static checks are off (the
`unchecked_verifier`): these candidates use os, socket and subprocess, which the static check
refuses; here the sandbox alone must hold.

Each candidate is the honest softmax with an escape attempt at the top of its first forward."""

import hashlib
import json
import logging
import os
import re
import signal
import socket
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from corpus_index import TASKS

import mtmc
from mtmc.program import Program
from mtmc.tasks import load_task
from mtmc.verify import InterpreterVerifier, Status, VerifierError, format_verdict_table, sandbox
from mtmc.verify.engine import Engine, Settings
from mtmc.verify.verifier import _worker_env
from mtmc.verify.worker_pool import WorkerPool

FULL = "netns+pidns+readonly+nobody"
REPO = Path(mtmc.__file__).resolve().parents[1]
HONEST = (TASKS.parent / "honest" / "softmax.py").read_text()


def candidate(escape: str) -> Program:
    """The honest softmax whose first forward runs `escape` (indented code) first."""
    head = "import os\nimport socket\nimport subprocess\nimport sys\nimport time\nATTEMPTED = []\n"
    hook = ("    def forward(self, x):\n        if not ATTEMPTED:\n            ATTEMPTED.append(1)\n"
            + textwrap.indent(textwrap.dedent(escape).strip(), " " * 12) + "\n")
    source = head + HONEST.replace("    def forward(self, x):\n", hook)
    return Program(source + f"\n# {uuid.uuid4().hex}\n")  # a fresh digest: never a cached verdict


def verify(verifier, program: Program):
    return verifier.verify(load_task(TASKS / "softmax.py"), program)


def marked_processes(marker: str) -> list[int]:
    """Pids of processes on this machine whose command line holds `marker`."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                found.append(int(entry))
        except OSError:
            pass
    return found


# nobody needs the read-only view here: the Python install is under /root (0700), which only the
# mount namespace opens to nobody (sandbox._interpreter_hides).
@pytest.mark.parametrize("levels", [["netns"], ["pidns"], ["readonly"], ["readonly", "nobody"]], ids=str)
def test_each_level_alone_is_granted_here_and_holds(levels):
    assert sandbox.try_levels(levels) == (True, "ok")


def probe_folder(tmp_path: Path) -> Path:
    (tmp_path / "job").mkdir()
    (tmp_path / "ref").mkdir()
    (tmp_path / "ref" / "inputs.pt").write_text("inputs")
    (tmp_path / "secret").write_text("reference outputs")
    return tmp_path


LEAKS = [("netns", "127.0.0.1 reachable"), ("pidns", "not 2"), ("readonly", "pool folder is visible"),
         ("nobody", "still privileged")]


@pytest.mark.parametrize("level,leak", LEAKS)
def test_the_probe_sees_a_level_that_does_not_hold(tmp_path, level, leak):
    """This test process has none of the levels: the probe's check of each must say so."""
    assert leak in sandbox.leaks([level], probe_folder(tmp_path))


def test_a_machine_that_refuses_namespaces_gets_rlimits_only_with_the_reasons():
    """As an unprivileged user (standing for a machine that grants nothing) every level is refused,
    with the kernel's reason, and nothing is claimed."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.setresgid(sandbox.NOBODY, sandbox.NOBODY, sandbox.NOBODY)
            os.setresuid(sandbox.NOBODY, sandbox.NOBODY, sandbox.NOBODY)
            levels, note = sandbox.probe_levels()
            os.write(write_fd, json.dumps([levels, note]).encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd) as pipe:
        levels, note = json.loads(pipe.read())
    os.waitpid(pid, 0)
    assert levels == [] and sandbox.describe(levels) == "rlimits-only"
    assert all(f"{level}: " in note for level in sandbox.LEVELS) and "Operation not permitted" in note


def test_an_honest_candidate_passes_with_full_isolation_and_leaves_no_folder(unchecked_verifier):
    verdict = verify(unchecked_verifier, candidate("open('made_here.txt', 'w').write('scratch is writable')"))
    assert verdict.status == Status.OK, format_verdict_table(verdict)
    assert verdict.isolation == FULL
    assert re.search(rf"^isolation +{re.escape(FULL)}$", format_verdict_table(verdict), re.MULTILINE)
    assert list(unchecked_verifier.engine.pool.root.glob("job*")) == []


def test_the_candidate_sees_a_confined_process(unchecked_verifier):
    """From the inside: nobody without capabilities, alone in its PID namespace, its pool folder
    showing only its own job and inputs, HOME, TMPDIR and the Triton cache in its scratch."""
    probe = candidate('''
        status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines())
        problems = []
        if os.getuid() != 65534 or os.getgid() != 65534 or os.getgroups():
            problems.append(f"uid {os.getuid()} gid {os.getgid()} groups {os.getgroups()}")
        if int(status["CapEff"], 16) or int(status["CapBnd"], 16) or status["NoNewPrivs"].strip() != "1":
            problems.append("capabilities " + status["CapEff"] + status["CapBnd"] + status["NoNewPrivs"])
        if sorted(p for p in os.listdir("/proc") if p.isdigit()) != ["1", "2"] or os.getpid() != 2:
            problems.append(f"processes {os.listdir('/proc')}")
        pool = sorted(os.listdir(os.path.dirname(os.getcwd())))
        if len(pool) != 2 or not pool[0].startswith("job") or not pool[1].startswith("reference-"):
            problems.append(f"pool folder {pool}")
        for name in ("HOME", "TMPDIR", "TRITON_CACHE_DIR"):
            if not os.environ[name].startswith(os.getcwd()):
                problems.append(f"{name}={os.environ[name]}")
        if problems:
            raise RuntimeError("sandbox: " + "; ".join(problems))
    ''')
    verdict = verify(unchecked_verifier, probe)
    assert verdict.status == Status.OK, format_verdict_table(verdict)


@pytest.fixture(scope="module")
def shared_cache_engine():
    """One interpreter worker whose candidate jobs share a compile cache, as shared mode's do on a GPU
    (the interpreter compiles nothing, so the candidates below write the cache themselves)."""
    env = _worker_env({"TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1"})
    pool = WorkerPool("interpreter", [env], 8.0, 1, shared_compile_cache=True)
    engine = Engine(pool, Settings(timeout_s=20.0, static_checks=False, baselines=False, strict=True), "cpu",
                    None)
    yield engine
    engine.close()


def test_a_shared_compile_cache_outlives_the_job_and_nothing_else_of_the_pool_shows(shared_cache_engine):
    """The first job writes into the shared Triton cache, the next finds it there; each still sees
    only its own job, the inputs and the cache in the pool's folder, and keeps HOME in its scratch."""
    writer = candidate('''
        cache = os.environ["TRITON_CACHE_DIR"]
        if cache.startswith(os.getcwd()) or os.environ["HOME"] != os.path.join(os.getcwd(), "home"):
            raise RuntimeError(f"cache {cache}, HOME {os.environ['HOME']}")
        pool = sorted(os.listdir(os.path.dirname(os.getcwd())))
        if [name for name in pool if not name.startswith(("job", "reference-"))] != ["triton-cache"]:
            raise RuntimeError(f"pool folder {pool}")
        os.makedirs(os.path.join(cache, "kernel-key"))
        open(os.path.join(cache, "kernel-key", "kernel.cubin"), "w").write("compiled")
    ''')
    reader = candidate('''
        found = open(os.path.join(os.environ["TRITON_CACHE_DIR"], "kernel-key", "kernel.cubin")).read()
        if found != "compiled":
            raise RuntimeError(found)
    ''')
    task = load_task(TASKS / "softmax.py")
    for program in (writer, reader):
        verdict = shared_cache_engine.verify(task, program)
        assert verdict.status == Status.OK, format_verdict_table(verdict)
        assert verdict.isolation == FULL
    cached = shared_cache_engine.pool.compile_cache / "kernel-key" / "kernel.cubin"
    assert cached.read_text() == "compiled" and cached.stat().st_uid == sandbox.NOBODY


def test_a_writable_folder_outside_the_pool_is_refused(tmp_path):
    with pytest.raises(sandbox.SandboxError, match="beside the scratch folder"):
        sandbox._read_only_world(tmp_path / "pool" / "job", [], [tmp_path / "elsewhere"])


@pytest.mark.parametrize("where", ["/tmp", "/dev/shm", str(REPO)])
def test_a_write_outside_its_folder_fails_and_leaves_nothing(unchecked_verifier, where):
    target = Path(where) / f"mtmc-escape-{uuid.uuid4().hex}"
    verdict = verify(unchecked_verifier, candidate(f"open({str(target)!r}, 'w').write('escaped')"))
    assert verdict.status == Status.RUNTIME_ERROR, format_verdict_table(verdict)
    assert "Read-only file system" in verdict.message
    assert not target.exists()


def test_editing_the_verifier_fails_and_its_source_is_unchanged(unchecked_verifier):
    victim = Path(mtmc.__file__).parent / "verify" / "correctness.py"
    before = hashlib.sha256(victim.read_bytes()).hexdigest()
    verdict = verify(unchecked_verifier, candidate(f"open({str(victim)!r}, 'a').write('# pwned')"))
    assert verdict.status == Status.RUNTIME_ERROR, format_verdict_table(verdict)
    assert "Permission denied" in verdict.message  # root's file, before the read-only mount is asked
    assert hashlib.sha256(victim.read_bytes()).hexdigest() == before


def test_a_socket_to_the_loopback_is_unreachable(unchecked_verifier):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        server.setblocking(False)
        port = server.getsockname()[1]
        verdict = verify(unchecked_verifier, candidate(f'''
            socket.create_connection(("127.0.0.1", {port}), timeout=2).sendall(b"escaped")
        '''))
        with pytest.raises(BlockingIOError):
            server.accept()  # nobody came
    assert verdict.status == Status.RUNTIME_ERROR, format_verdict_table(verdict)
    assert "Network is unreachable" in verdict.message


SLEEPER = "import time; time.sleep(120)"


@pytest.mark.parametrize("spawn", ["setsid", "double_fork"])
def test_a_process_left_running_is_rejected_and_killed(unchecked_verifier, spawn):
    marker = f"mtmc-marker-{uuid.uuid4().hex}"
    argv = [f"{SLEEPER}", marker]
    escape = {
        "setsid": f"subprocess.Popen(['setsid', sys.executable, '-c', *{argv!r}])",
        # the daemon recipe: fork, new session, fork again, the middle one exits
        "double_fork": f'''
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    os.execv(sys.executable, [sys.executable, "-c", *{argv!r}])
                os._exit(0)
            time.sleep(0.5)  # the daemon is up before the job ends
        ''',
    }[spawn]
    verdict = verify(unchecked_verifier, candidate(escape))
    assert verdict.status == Status.REJECTED, format_verdict_table(verdict)
    assert "left 1 process(es) running" in verdict.message
    assert marked_processes(marker) == []


def test_a_worker_killed_from_outside_is_replaced(unchecked_verifier):
    """Candidates can no longer kill their worker (corpus/iso_kill_worker.py); an OOM killer can."""
    assert verify(unchecked_verifier, candidate("pass")).ok  # the task's reference is made and cached
    pool = unchecked_verifier.engine.pool
    restarts = pool.restarts
    os.kill(pool.workers[0].pid, signal.SIGKILL)
    pool.workers[0].proc.wait()
    verdict = verify(unchecked_verifier, candidate("pass"))
    assert verdict.status == Status.CRASH and "infrastructure: worker_died" in verdict.flags
    assert pool.restarts == restarts + 1
    assert verify(unchecked_verifier, candidate("pass")).ok


def test_a_changed_sealed_file_stops_the_verifier(unchecked_verifier, tmp_path):
    """The integrity seal: a file the verifier sealed changes (as if a candidate had escaped and
    rewritten it) and the next verdict is refused; restored, verdicts go on."""
    sealed = tmp_path / "sealed.py"
    sealed.write_text("RULE = 'strict'\n")
    unchecked_verifier.engine.seal.add_file(sealed)
    sealed.write_text("RULE = 'lenient'\n")
    with pytest.raises(VerifierError, match="sealed.py"):
        verify(unchecked_verifier, candidate("pass"))
    sealed.write_text("RULE = 'strict'\n")  # same bytes again: the seal holds
    assert verify(unchecked_verifier, candidate("pass")).ok


def test_without_the_sandbox_the_fallback_is_loud_and_strays_still_die(monkeypatch, caplog):
    """MTMC_VERIFY_SANDBOX=0 stands for a machine that grants no namespace: the verdict says
    rlimits-only, a warning is logged, and a setsid process is still found, killed and rejected
    (the worker is a subreaper: orphans come to it, whatever their process group)."""
    monkeypatch.setenv("MTMC_VERIFY_SANDBOX", "0")
    marker = f"mtmc-marker-{uuid.uuid4().hex}"
    program = candidate(f"subprocess.Popen(['setsid', sys.executable, '-c', {SLEEPER!r}, {marker!r}])\n"
                        "time.sleep(0.5)")
    with caplog.at_level(logging.WARNING), InterpreterVerifier(timeout_s=20.0, static_checks=False) as v:
        verdict = verify(v, program)
    assert verdict.isolation == "rlimits-only"
    assert "isolation 'rlimits-only'" in caplog.text and "MTMC_VERIFY_SANDBOX=0" in caplog.text
    assert verdict.status == Status.REJECTED, format_verdict_table(verdict)
    assert "left 1 process(es) running" in verdict.message
    deadline = time.monotonic() + 5
    while marked_processes(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert marked_processes(marker) == []


def test_a_stray_hidden_from_the_candidates_own_count_is_still_found(unchecked_verifier):
    """The worker counts what is left in the job's PID namespace from outside it: a candidate that
    patches any count in its own process (here the one the child used to run) hides nothing."""
    marker = f"mtmc-marker-{uuid.uuid4().hex}"
    verdict = verify(unchecked_verifier, candidate(f'''
        subprocess.Popen(['setsid', sys.executable, '-c', {SLEEPER!r}, {marker!r}])
        time.sleep(0.5)
        sys.modules["mtmc.verify.sandbox"].other_processes = lambda: 0
    '''))
    assert verdict.status == Status.REJECTED, format_verdict_table(verdict)
    assert "left 1 process(es) running" in verdict.message
    assert marked_processes(marker) == []


def test_a_fork_bomb_hits_the_process_cap(unchecked_verifier, monkeypatch):
    """RLIMIT_NPROC (nobody's tasks now, plus the pool's headroom, made small here): fork refuses
    before the candidate has 300 processes. It cleans up and re-raises, so the refusal itself is
    the verdict's reason."""
    monkeypatch.setattr(unchecked_verifier.engine.pool, "nproc_headroom", 64)
    verdict = verify(unchecked_verifier, candidate('''
        children = []
        try:
            for _ in range(300):
                pid = os.fork()
                if pid == 0:
                    time.sleep(60)
                    os._exit(0)
                children.append(pid)
        finally:
            for pid in children:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
        raise RuntimeError(f"forked {len(children)} processes")
    '''))
    assert verdict.status == Status.RUNTIME_ERROR, format_verdict_table(verdict)
    assert "BlockingIOError: [Errno 11] Resource temporarily unavailable" in verdict.message


def test_the_candidate_holds_no_descriptor_of_the_worker(unchecked_verifier):
    """Inside: only stdin (/dev/null), its own log (stdout, stderr, the crash handler's copy).
    Outside: the namespace's init holds nothing of the worker (its socket to this process was
    inheritable, and a root candidate could take it from init with pidfd_getfd)."""
    verdict = verify(unchecked_verifier, candidate('''
        held = {}
        for fd in os.listdir("/proc/self/fd"):
            try:
                held[int(fd)] = os.readlink(f"/proc/self/fd/{fd}")
            except FileNotFoundError:
                pass  # the listing's own descriptor
        log = os.path.join(os.getcwd(), "child.log")
        foreign = {fd: to for fd, to in held.items() if to != log and (fd, to) != (0, "/dev/null")}
        if foreign:
            raise RuntimeError(f"inherited descriptors: {foreign}")
    '''))
    assert verdict.status == Status.OK, format_verdict_table(verdict)
    worker = unchecked_verifier.engine.pool.workers[0].pid
    deadline = time.monotonic() + 10
    while not (inits := namespace_inits(worker)) and time.monotonic() < deadline:
        time.sleep(0.05)  # the next spare is forked once the verdict's result is sent
    assert inits, "the next spare's namespace init is running"
    for init in inits:
        held = {fd: os.readlink(f"/proc/{init}/fd/{fd}") for fd in os.listdir(f"/proc/{init}/fd")}
        assert set(held) == {"0", "1", "2"} and held["1"] == held["2"] == "/dev/null", held


def namespace_inits(worker: int) -> list[int]:
    inits = []
    for pid in map(int, Path(f"/proc/{worker}/task/{worker}/children").read_text().split()):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(sandbox.INIT[0].encode()):
                inits.append(pid)
        except OSError:
            pass
    return inits


def test_a_verdict_under_weaker_isolation_is_not_served_under_full_isolation(
        unchecked_verifier, monkeypatch, tmp_path):
    """The verdict cache's key holds the isolation: a write outside scratch passes without the
    sandbox (rlimits-only), and the same program, same settings, same cache, is judged afresh
    under full isolation (where the write fails)."""
    from mtmc.verify.cache import VerdictCache

    cache = tmp_path / "verdicts.sqlite"
    target = Path("/tmp") / f"mtmc-escape-{uuid.uuid4().hex}"
    program = candidate(f"open({str(target)!r}, 'w').write('escaped')")
    monkeypatch.setenv("MTMC_VERIFY_SANDBOX", "0")
    with InterpreterVerifier(timeout_s=unchecked_verifier.engine.settings.timeout_s, static_checks=False,
                             cache_path=str(cache)) as weak:
        assert weak.engine.settings.fingerprint() == unchecked_verifier.engine.settings.fingerprint()
        loose = verify(weak, program)
    target.unlink()
    assert loose.status == Status.OK and loose.isolation == "rlimits-only", format_verdict_table(loose)
    monkeypatch.setattr(unchecked_verifier.engine, "cache", VerdictCache(cache))
    verdict = verify(unchecked_verifier, program)
    assert verdict.status == Status.RUNTIME_ERROR, format_verdict_table(verdict)
    assert "Read-only file system" in verdict.message and not target.exists()
