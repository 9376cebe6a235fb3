"""Shared mode (mtmc/verify/timing_gpu.py): the workers' GPU layout, the timing lock that keeps two
timings apart, which jobs get the lock, and a verdict cache that never mixes the two modes."""

import multiprocessing
import time

import pytest

from mtmc.verify import timing_gpu
from mtmc.verify.engine import Settings
from mtmc.verify.verifier import VerifierError, _gpu_layout, _shared_compile_cache
from mtmc.verify.worker_pool import with_timing_lock


def test_exclusive_mode_is_one_worker_per_gpu_without_a_lock():
    assert timing_gpu.worker_layout(["0", "1"], 1, []) == [("0", None), ("1", None)]


def test_shared_mode_pairs_each_worker_with_the_timing_gpus_in_turn():
    layout = timing_gpu.worker_layout(["0", "1"], 2, ["2", "3"])
    assert layout == [("0,2", 0), ("0,3", 1), ("1,2", 0), ("1,3", 1)]


@pytest.mark.parametrize("gpus,workers,timing,why", [
    (["0"], 2, [], "needs timing_gpus"),
    (["0", "1"], 2, ["1"], "both compute and timing"),
    (["0"], 0, ["1"], ">= 1"),
])
def test_layouts_that_would_time_wrongly_are_refused(gpus, workers, timing, why):
    with pytest.raises(ValueError, match=why):
        timing_gpu.worker_layout(gpus, workers, timing)


def test_the_verifier_names_physical_gpus_and_says_which_mode(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5,6")
    layout, shared = _gpu_layout([0], 3, [2])
    assert layout == [("4,6", 0)] * 3
    assert "3 workers" in shared and "[2]" in shared
    assert _gpu_layout([0, 1], 1, []) == ([("4", None), ("5", None)], "")
    with pytest.raises(VerifierError, match="both compute and timing"):
        _gpu_layout([0], 2, [0])


def _hold(lock, seconds, spans):
    with timing_gpu.exclusive(lock):
        start = time.monotonic()
        time.sleep(seconds)
        spans.put((start, time.monotonic()))


def test_two_processes_never_hold_the_timing_lock_at_once(tmp_path):
    lock = timing_gpu.lock_file(tmp_path, 0)
    spans = multiprocessing.get_context("fork").Queue()
    workers = [multiprocessing.get_context("fork").Process(target=_hold, args=(lock, 0.3, spans))
               for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(10)
    (a_start, a_end), (b_start, b_end) = sorted(spans.get(timeout=1) for _ in workers)
    assert b_start >= a_end  # the second waited for the first


def test_the_lock_file_is_readable_by_a_confined_child(tmp_path):
    path = timing_gpu.lock_file(tmp_path, 3)
    assert path.endswith("timing-gpu3.lock")
    assert (tmp_path / "timing-gpu3.lock").stat().st_mode & 0o777 == 0o644


def test_no_lock_in_exclusive_mode_changes_nothing():
    with timing_gpu.exclusive(None), timing_gpu.on_timing_device(None), timing_gpu.timing_device(None):
        pass


def test_only_timed_jobs_get_the_lock():
    args = {"inputs_path": "/x"}
    assert with_timing_lock("candidate", args, "/l")["timing_lock"] == "/l"
    assert with_timing_lock("baseline", args, "/l")["timing_lock"] == "/l"
    assert with_timing_lock("reference", args, "/l") == args
    assert with_timing_lock("candidate", args, None) == args


def test_verdicts_of_the_two_modes_never_share_a_cache_key():
    exclusive = Settings()
    assert "shared_gpus" not in exclusive.fingerprint()  # the key it had before shared mode existed
    assert Settings(shared_gpus="2 workers").fingerprint() != exclusive.fingerprint()


def test_out_of_memory_on_a_shared_gpu_is_the_machines_failure_not_the_programs():
    from mtmc.verify.engine import cacheable, shared_gpu_flags
    from mtmc.verify.verdict import Status, Verdict

    oom = Verdict(Status.RUNTIME_ERROR, "case 2: OutOfMemoryError: CUDA out of memory. Tried to allocate 1G")
    oom.flags += shared_gpu_flags(oom, "8 workers")
    assert oom.flags[0] == "shared_gpu: 8 workers" and not cacheable(oom)
    wrong = Verdict(Status.INCORRECT, "case 0: max abs error 3.0")
    wrong.flags += shared_gpu_flags(wrong, "8 workers")
    assert cacheable(wrong)


def test_a_shared_gpus_resident_inputs_budget_is_split_between_its_jobs(monkeypatch):
    from types import SimpleNamespace

    from mtmc.verify import case_io

    monkeypatch.setattr(case_io.torch.cuda, "get_device_properties",
                        lambda device: SimpleNamespace(total_memory=80 * 2**30))
    monkeypatch.delenv(case_io.JOBS_PER_GPU_ENV, raising=False)
    assert case_io.resident_budget("cuda") == 10 * 2**30  # exclusive: an eighth of the GPU
    monkeypatch.setenv(case_io.JOBS_PER_GPU_ENV, "4")
    assert case_io.resident_budget("cuda") == 10 * 2**30 / 4


def test_a_shared_compile_cache_is_on_in_shared_mode_and_refused_in_exclusive_mode():
    assert _shared_compile_cache(None, "4 workers") is True
    assert _shared_compile_cache(False, "4 workers") is False
    assert _shared_compile_cache(None, "") is False
    with pytest.raises(VerifierError, match="trusted programs only"):
        _shared_compile_cache(True, "")
