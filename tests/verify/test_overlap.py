"""`verifier.overlap_baselines` (mtmc/verify/overlap.py): the baselines compile beside the reference,
time alone, and the candidate overlaps nothing trusted; the setting's plumbing; verdicts unchanged."""

import os
import threading
import time

import pytest
from corpus_index import HONEST, TASKS

from mtmc.program import Program
from mtmc.tasks import load_task
from mtmc.verify import overlap
from mtmc.verify import verifier as verifier_module
from mtmc.verify.engine import Engine, Settings, VerifierError
from mtmc.verify.forkserver import Outcome
from mtmc.verify.integrity import Seal
from mtmc.verify.trusted import TrustedRuns
from mtmc.verify.worker_pool import WorkerPool

TASK = TASKS / "pointwise.py"


# --- an instrumented pool: jobs are intervals on a shared clock ---------------------------------
class Lanes:
    """A pool of `n` workers, each with a lane, whose jobs sleep and record when they did what:
    the baseline job compiles (`compile_s`), waits at its gate, then times (`timing_s`)."""

    def __init__(self, tmp_path, reference_fails=False, floor_failures=(), compile_s=0.3) -> None:
        self.tmp_path = tmp_path
        self.workers, self.lanes = ["w0"], {"w0": "lane0"}
        self.idle = threading.Semaphore(1)
        self.spans: list[tuple[str, str, str, float, float]] = []  # (job, phase, where, start, end)
        self.reference_fails, self.floor_failures = reference_fails, list(floor_failures)
        self.compile_s = compile_s
        self.lock = threading.Lock()

    def data_dir(self, name):
        (self.tmp_path / name).mkdir(exist_ok=True)
        return self.tmp_path / name

    def take(self):
        self.idle.acquire()
        return "w0"

    def give(self, worker):
        self.idle.release()

    def lane(self, worker):
        return self.lanes[worker]

    def run(self, job, args, timeout_s):
        worker = self.take()
        try:
            return self.run_on(worker, job, args, timeout_s)
        finally:
            self.give(worker)

    def _span(self, job, phase, where, seconds):
        start = time.monotonic()
        time.sleep(seconds)
        with self.lock:
            self.spans.append((job, phase, where, start, time.monotonic()))

    def run_on(self, worker, job, args, timeout_s):
        if job == "reference":
            self._span(job, "gpu", worker, 0.4)
            if self.reference_fails:
                self.reference_fails = False  # fails beside the baseline only
                return Outcome("exit", "exit code 1", "CUDA out of memory"), None
            open(args["inputs_path"], "wb").close()
            expected = [{"outputs": []} for _ in args["cases"]]
            failures, self.floor_failures = self.floor_failures, []
            return Outcome("done"), {"expected": expected, "timing_expected": None, "eager_tf32": False,
                                     "phases_s": {"forward": 0.4}, "floor_failures": failures,
                                     "input_checks": [[] for _ in args["cases"]]}
        if job == "baseline":
            self._span(job, "compile", worker, self.compile_s)
            if "gate" in args and overlap.wait_gate(args["gate"]) != overlap.GO:
                return Outcome("done"), {"aborted": True, "phases_s": {}}
            self._span(job, "timing", worker, 0.1)
            timings = {"eager": {"reported_ms": 2.0}, "compiled": {"reported_ms": 1.0}}
            return Outcome("done"), {"timings": timings, "compile_error": None, "phases_s": {"timing": 0.1}}
        self._span(job, "gpu", worker, 0.2)  # the candidate
        return Outcome("done"), {}

    def of(self, job, phase=None):
        return [s for s in self.spans if s[0] == job and (phase is None or s[1] == phase)]


def _overlap(a, b) -> bool:
    return a[3] < b[4] and b[3] < a[4]


def _judge_once(pool, settings):
    """What the engine does for a task's first verdict: the reference, the candidate's job, then the
    baselines (made already with the overlap)."""
    task = load_task(TASK)
    runs = TrustedRuns(pool, settings, "cuda", Seal(), base_seed=0)
    reference = runs.reference(task)
    pool.run("candidate", {}, 60)
    return runs, task, reference, runs.baseline(task, reference)


def test_the_compile_overlaps_the_reference_and_no_timing_overlaps_anything(tmp_path):
    pool = Lanes(tmp_path)
    _, _, reference, baseline = _judge_once(pool, Settings(seeds=1, seed=0, overlap_baselines=True))
    (ref,), (compile_,) = pool.of("reference"), pool.of("baseline", "compile")
    (timing,) = pool.of("baseline", "timing")
    (candidate,) = pool.of("candidate")
    assert ref[2] == "lane0" and compile_[2] == "w0"  # the reference on the lane, the baseline on the worker
    assert _overlap(compile_, ref)
    for other in pool.spans:
        if other is not timing:
            assert not _overlap(timing, other), other
        if other is not candidate:
            assert not _overlap(candidate, other), other  # the candidate overlaps nothing trusted
    assert timing[3] >= ref[4] and candidate[3] >= timing[4]
    assert baseline["eager_ms"] == 2.0 and baseline["compiled_ms"] == 1.0
    assert len(pool.of("baseline")) == 2  # no second baseline job: the overlapped one was kept
    assert "after_reference" in baseline["phases_s"] and "overlap_wall" in reference.phases_s


def test_the_overlap_saves_the_shorter_of_reference_and_compile(tmp_path):
    """The instrumented jobs' wall: sequential 0.4 + 0.2 + 0.3 + 0.1 s; overlapped about 0.4 + 0.1 + 0.2."""
    walls = {}
    for on in (False, True):
        pool = Lanes(tmp_path / str(on))
        (tmp_path / str(on)).mkdir()
        start = time.monotonic()
        _judge_once(pool, Settings(seeds=1, seed=0, overlap_baselines=on))
        walls[on] = time.monotonic() - start
    assert walls[True] < walls[False] - 0.2


def test_a_reference_that_fails_beside_the_baseline_runs_again_alone(tmp_path):
    pool = Lanes(tmp_path, reference_fails=True)
    _, _, reference, baseline = _judge_once(pool, Settings(seeds=1, seed=0, overlap_baselines=True))
    first, second = pool.of("reference")
    assert first[2] == "lane0" and second[2] == "w0"
    assert len(pool.of("baseline", "timing")) == 1  # aborted at the gate; made later, the old way:
    assert pool.of("baseline", "timing")[0][3] >= second[4]
    assert not any(_overlap(second, s) for s in pool.spans if s is not second)
    assert "overlap_wall" not in reference.phases_s and baseline["eager_ms"] == 2.0


def test_a_float64_floor_that_failed_beside_the_baseline_is_measured_again_alone(tmp_path):
    pool = Lanes(tmp_path, floor_failures=["OutOfMemoryError"])
    _, _, reference, baseline = _judge_once(pool, Settings(seeds=1, seed=0, overlap_baselines=True))
    assert [s[2] for s in pool.of("reference")] == ["lane0", "w0"]
    assert len(pool.of("baseline", "timing")) == 1  # the overlapped baselines, timed alone, were kept
    assert "overlap_wall" not in reference.phases_s


@pytest.mark.parametrize("settings, device", [(Settings(seeds=1, seed=0), "cuda"),
                                              (Settings(seeds=1, seed=0, overlap_baselines=True), "cpu"),
                                              (Settings(seeds=1, seed=0, overlap_baselines=True,
                                                        baselines=False), "cuda")])
def test_off_no_baselines_or_the_cpu_keep_the_sequential_order(tmp_path, settings, device):
    pool = Lanes(tmp_path)
    runs = TrustedRuns(pool, settings, device, Seal(), base_seed=0)
    runs.reference(load_task(TASK))
    assert [s[2] for s in pool.spans] == ["w0"] and not pool.of("baseline")


# --- the gate and the deferred benchmarks ------------------------------------------------------
def test_the_gate_holds_the_child_until_the_main_process_says_a_word(tmp_path):
    for word in (overlap.GO, overlap.ABORT):
        gate, heard = overlap.Gate(tmp_path), []

        def wait(gate=gate, heard=heard):
            heard.append((overlap.wait_gate(gate.path), time.monotonic()))

        waiter = threading.Thread(target=wait)
        waiter.start()
        time.sleep(0.2)
        assert not heard  # still waiting
        opened = time.monotonic()
        gate.open(word)
        waiter.join(5)
        assert heard[0][0] == word and heard[0][1] >= opened
        assert os.stat(gate.path).st_mode & 0o777 == 0o600


def test_a_gate_dropped_without_a_word_aborts(tmp_path):
    gate = overlap.Gate(tmp_path)
    os.close(gate._fd)  # the main process died
    gate._fd = None
    assert overlap.wait_gate(gate.path) == overlap.ABORT


def test_inductor_benchmarks_raise_past_except_exception_while_deferred():
    if not overlap.can_defer():
        pytest.skip("this PyTorch's inductor has no benchmarker object")
    from torch._inductor.runtime.benchmarking import benchmarker

    def swallowed():
        try:
            benchmarker.benchmark_gpu(lambda: None)
        except Exception:  # what inductor does with a config that fails: it must not see this one
            return "swallowed"

    with overlap.deferred_benchmarks(), pytest.raises(overlap.Deferred) as raised:
        swallowed()
    assert raised.value.compiling is False  # no compile running here
    assert "benchmark_gpu" not in vars(benchmarker)  # the class's method again


def test_early_models_are_used_only_for_their_own_case():
    case = {"sizes": {"n": 8}, "model_seed": 1, "input_seed": 5001, "mode": None}
    early = overlap.Early(case, model=None)
    assert overlap.same_case(early, {**case, "fingerprint": [], "init_inputs": []})
    assert not overlap.same_case(early, {**case, "model_seed": 2}) and not overlap.same_case(None, case)


# --- plumbing ------------------------------------------------------------------------------------
def test_the_setting_reaches_the_engine_and_the_pool_and_is_on_in_exclusive_mode_by_default(monkeypatch):
    seen = {}

    class FakePool:
        def __init__(self, *args, **kwargs):
            seen["lanes"] = args[6] if len(args) > 6 else kwargs.get("lanes")

    class FakeEngine:
        def __init__(self, pool, settings, device_type, cache_path):
            seen["settings"] = settings

    monkeypatch.setattr(verifier_module, "WorkerPool", FakePool)
    monkeypatch.setattr(verifier_module, "Engine", FakeEngine)
    monkeypatch.setattr(verifier_module, "_gpu_layout", lambda *args: ([("0", None)], ""))
    verifier_module.LocalVerifier(overlap_baselines=False)
    assert seen == {"lanes": False, "settings": seen["settings"]} and not seen["settings"].overlap_baselines
    verifier_module.LocalVerifier()  # the default: on in exclusive mode
    assert seen["lanes"] is True and seen["settings"].overlap_baselines
    monkeypatch.setattr(verifier_module, "_gpu_layout", lambda *args: ([("0,1", 0)], "shared"))
    verifier_module.LocalVerifier()  # the default: off in shared mode
    assert seen["lanes"] is False and not seen["settings"].overlap_baselines
    with pytest.raises(VerifierError, match="overlap_baselines is for exclusive mode"):
        verifier_module.LocalVerifier(overlap_baselines=True)


def test_the_setting_keeps_the_cache_key_off_and_changes_it_on():
    off, on = Settings(), Settings(overlap_baselines=True)
    assert "overlap_baselines" not in off.fingerprint() and off.fingerprint() != on.fingerprint()


def test_the_local_config_leaves_the_setting_to_the_mode():
    import yaml

    from mtmc.verify.verifier import LocalVerifier  # noqa: F401  (the target takes it)

    conf = yaml.safe_load((TASKS.parents[2] / "conf" / "verifier" / "local.yaml").read_text()) \
        if (TASKS.parents[2] / "conf").is_dir() else None
    if conf is None:
        pytest.skip("no conf/ beside the tests")
    assert conf["overlap_baselines"] is None  # LocalVerifier's default: on in exclusive mode only


# --- real workers: a lane, and the reference made on it -----------------------------------------
def _interpreter_engine(overlapped: bool) -> Engine:
    env = verifier_module._worker_env({"TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": "",
                                       "OMP_NUM_THREADS": "1"})
    pool = WorkerPool("interpreter", [env], 8.0, 1, lanes=overlapped)
    settings = Settings(seeds=2, seed=7, baselines=False, overlap_baselines=overlapped)
    engine = Engine(pool, settings, "cpu", None)
    if overlapped:  # the CPU has no baselines: take the overlapped path anyway (its baseline job fails
        engine.trusted._overlaps = lambda key: True  # there, without CUDA, and is not kept)
    return engine


def test_a_lane_forks_its_children_lazily_and_runs_trusted_jobs():
    env = verifier_module._worker_env({"TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""})
    pool = WorkerPool("interpreter", [env], 8.0, 1, lanes=True)
    try:
        worker = pool.take()
        lane = pool.lane(worker)
        assert lane is not None and lane.lazy and not worker.lazy
        for _ in range(2):
            outcome, result = pool.run_on(lane, "probe", {"device": "cpu"}, 60)
            assert outcome.status == "done" and result["device"] == "cpu (triton interpreter)"
        pool.give(worker)
    finally:
        pool.close()


def test_verdicts_with_the_overlap_equal_those_without_on_the_interpreter():
    """The real path on real workers: the reference job on the lane, the (CUDA-less, failing) baseline
    job on the worker behind the gate; the verdicts are the sequential ones."""
    task = load_task(TASK)
    honest = (HONEST / "pointwise.py").read_text()
    programs = [Program(honest), Program(honest.replace("2.0 * x", "2.5 * x"))]
    verdicts = {}
    for overlapped in (False, True):
        engine = _interpreter_engine(overlapped)
        try:
            verdicts[overlapped] = [engine.verify(task, p) for p in programs]
            reference = engine.trusted.reference(task)
            assert ("overlap_wall" in reference.phases_s) == overlapped  # made on the lane
            assert not engine.trusted._baselines  # the failed overlapped baseline was not kept
        finally:
            engine.close()
    assert [v.status.value for v in verdicts[False]] == ["ok", "incorrect"]
    for off, on in zip(verdicts[False], verdicts[True], strict=True):
        assert (off.status, off.message, off.flags, off.max_abs_error, off.rel_error) == \
            (on.status, on.message, on.flags, on.max_abs_error, on.rel_error)
