"""One-GPU mode (timing_gpu.py `gpu_lock`, compile_pass.py, trusted_batch.py): the layout, which jobs
take the GPU's lock and where, a trusted batch's compiles before the lock and its cases and timing
under it, and the compile pass that turns Triton launches into compiles."""

from __future__ import annotations

import fcntl
import itertools
import os

import pytest
import torch

from mtmc.verify import compile_pass, timing_gpu, trusted_batch
from mtmc.verify.batch import _alone
from mtmc.verify.engine import Engine
from mtmc.verify.forkserver import Outcome
from mtmc.verify.verdict import Status
from mtmc.verify.verifier import _gpu_layout
from mtmc.verify.worker_pool import WorkerPool, with_gpu_lock


def held_elsewhere(lock: str) -> bool:
    """Whether someone holds `lock` (a second open file description's flock would block)."""
    fd = os.open(lock, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def test_one_gpu_mode_puts_every_worker_on_its_gpu_with_that_gpus_lock(monkeypatch):
    assert timing_gpu.worker_layout(["0"], 3, [], gpu_lock=True) == [("0", 0)] * 3
    two = timing_gpu.worker_layout(["0", "1"], 2, [], gpu_lock=True)
    assert two == [("0", 0), ("0", 0), ("1", 1), ("1", 1)]
    with pytest.raises(ValueError, match="without a timing GPU"):
        timing_gpu.worker_layout(["0"], 2, ["1"], gpu_lock=True)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    layout, shared = _gpu_layout([0], 12, [], gpu_lock=True)
    assert layout == [("3", 0)] * 12 and "12 workers" in shared and "lock" in shared


def test_only_a_trusted_batch_takes_the_lock_itself():
    args = {"inputs_path": "/x"}
    assert with_gpu_lock("tree_batch", args, "/l") == {**args, "gpu_lock": "/l"}
    for job in ("reference", "baseline", "candidate", "probe"):
        assert with_gpu_lock(job, args, "/l") == args
    assert timing_gpu.MAIN_LOCKED_JOBS.isdisjoint(timing_gpu.CHILD_LOCKED_JOBS)


class _Worker:
    """Notes, at each job, whether the GPU's lock is held (by the pool, around the job)."""

    def __init__(self, lock: str) -> None:
        self.lock, self.seen = lock, []

    def run(self, message: dict, timeout_s: float) -> Outcome:
        self.seen.append((message["job"], held_elsewhere(self.lock), message["args"].get("gpu_lock")))
        return Outcome("timeout", "1 s", "")


def _pool(tmp_path, gpu_lock: bool) -> tuple[WorkerPool, _Worker]:
    lock = timing_gpu.lock_file(tmp_path, 0)
    worker = _Worker(lock)
    pool = WorkerPool.__new__(WorkerPool)  # no fork-servers: the job dispatch alone
    pool.root, pool.compile_cache, pool.memory_gb, pool.cpu_threads = tmp_path, None, None, None
    pool.nproc_headroom, pool._numbers, pool.gpu_lock = 0, itertools.count(), gpu_lock
    pool.timing_locks = {id(worker): lock}
    return pool, worker


def test_the_pool_runs_the_jobs_that_do_not_lock_themselves_whole_under_the_gpus_lock(tmp_path):
    pool, worker = _pool(tmp_path, gpu_lock=True)
    for job in ("reference", "baseline", "candidate", "tree_batch", "probe"):
        pool.run_on(worker, job, {}, 1.0)
    lock = worker.lock
    assert worker.seen == [("reference", True, None), ("baseline", True, None), ("candidate", True, None),
                           ("tree_batch", False, lock), ("probe", False, None)]
    assert not held_elsewhere(lock)  # given back after each job


def test_shared_mode_keeps_its_timing_lock_and_holds_nothing_in_the_pool(tmp_path):
    pool, worker = _pool(tmp_path, gpu_lock=False)
    pool.run_on(worker, "reference", {}, 1.0)
    pool.run_on(worker, "tree_batch", {}, 1.0)
    assert worker.seen == [("reference", False, None), ("tree_batch", False, None)]


def test_a_programs_compiles_come_before_the_lock_and_its_cases_and_timing_under_it(tmp_path, monkeypatch):
    lock = timing_gpu.lock_file(tmp_path, 0)
    events = []
    monkeypatch.setattr(trusted_batch, "import_candidate", lambda path, digest: object())
    monkeypatch.setattr(trusted_batch, "resident_budget", lambda device: 1e9)

    def compiles(forward, cases, device, room):
        events.append(("compile", held_elsewhere(lock)))
        return compile_pass.Pass(sizes=2, compiled=1, left=["case 1: stand-ins 4.00 GiB over the room"])

    monkeypatch.setattr(trusted_batch.compile_pass, "compile_cases", compiles)

    def cases(*a):
        events.append(("cases", held_elsewhere(lock)))
        return {"status": "ok", "message": "", "flags": []}

    def timing(module, data, options, timing_lock, phases):
        events.append(("timing", held_elsewhere(lock), timing_lock))
        return {}

    monkeypatch.setattr(trusted_batch, "_cases", cases)
    monkeypatch.setattr(trusted_batch, "_time", timing)
    monkeypatch.chdir(tmp_path)
    result = trusted_batch._judge_one({"source": "", "digest": "d"}, {"cases": []}, [], None, "cuda", True,
                                      {}, lock, None)
    assert events == [("compile", False), ("cases", True), ("timing", True, None)]
    assert {"compile", "cases", "lock_wait"} <= set(result["phases_s"])
    # what compiled under the lock, and why, is a flag of the program's row
    assert result["flags"] == ["compile_pass: 1 of 2 sizes compiled under the lock (case 1: stand-ins "
                               "4.00 GiB over the room)"]
    events.clear()  # without the lock (shared or exclusive mode): no compile pass, as before
    trusted_batch._judge_one({"source": "", "digest": "d"}, {"cases": []}, [], None, "cuda", True, {},
                             None, "/timing")
    assert events == [("cases", False), ("timing", False, "/timing")]


def test_compile_only_turns_each_launch_into_a_compile_and_autotunes_nothing(monkeypatch):
    jit, autotuner = compile_pass.seams()  # the installed Triton has them (3.6 on the GPU hosts too)
    calls = []

    def launch(self, *args, grid, warmup, **kwargs):  # Triton's signature: the seam is found by it
        calls.append((args, {**kwargs, "warmup": warmup}))

    monkeypatch.setattr(jit, "run", launch)
    tuned = autotuner.run

    class Config:
        def __init__(self, block: int) -> None:
            self.block = block

        def all_kwargs(self) -> dict:
            return {"BLOCK": self.block}

    class Tuner:  # an Autotuner's parts that compile_only uses
        arg_names, nargs = ["x"], None
        fn = jit.__new__(jit)

        def prune_configs(self, kwargs):
            return [Config(64), Config(128)]

    with compile_pass.compile_only() as active:
        assert active
        jit.run(object(), 1, grid=(1,), warmup=False)
        autotuner.run(Tuner(), 1, grid=(1,), warmup=False)
    assert [kwargs["warmup"] for _, kwargs in calls] == [True, True, True]
    assert [kwargs.get("BLOCK") for _, kwargs in calls] == [None, 64, 128]
    assert autotuner.run is tuned and jit.run is launch
    jit.run(object(), 2, grid=(1,), warmup=False)  # restored: as it was (here the test's stand-in)
    assert calls[-1][1]["warmup"] is False


def test_the_compile_pass_runs_each_size_once_on_stand_ins_within_the_room():
    """Each distinct size once; a size whose stand-ins (its inputs and, from out_meta, the outputs its
    forward allocates) exceed the room is left to the locked run, and said so (Pass.note)."""
    x = torch.arange(6.0).reshape(2, 3).t()
    cases = [{"sizes": {"N": 2}, "inputs": [x, 3]}, {"sizes": {"N": 2}, "inputs": [x, 3]},
             {"sizes": {"N": 4}, "inputs": [torch.zeros(10)], "out_meta": [[[25], "torch.float32"]]},
             {"sizes": {"N": 5}, "inputs": [x]}]
    seen, rooms = [], []

    def forward(case, inputs):
        seen.append((case["sizes"]["N"], inputs))

    def room(device):
        rooms.append(device)
        return 100  # N=4: 40 bytes of inputs, 100 of outputs

    done = compile_pass.compile_cases(forward, cases, "cpu", room)
    assert (done.sizes, done.compiled) == (3, 2) and rooms == ["cpu"] * 3  # asked at each size: it moves
    assert [n for n, _ in seen] == [2, 5]
    assert done.note == "compile_pass: 1 of 3 sizes compiled under the lock (case 2: stand-ins 0.00 GiB " \
                        "over the room 0.00 GiB)"
    stand_in = seen[0][1][0]
    assert stand_in.shape == x.shape and stand_in.stride() == x.stride()
    assert stand_in.data_ptr() != x.data_ptr()
    assert seen[0][1][1] == 3
    assert compile_pass.compile_cases(forward, cases, "cpu", lambda d: 140).note == ""  # room for all

    def fails(case, inputs):
        raise RuntimeError("garbage values")

    stopped = compile_pass.compile_cases(fails, cases, "cpu", lambda d: 1e9)
    assert stopped.compiled == 0 and stopped.left == ["stopped at case 0: RuntimeError: garbage values"]


def test_the_room_for_stand_ins_is_a_quarter_of_the_free_memory(monkeypatch):
    from mtmc.verify import case_io

    monkeypatch.setattr(case_io, "free_bytes", lambda device: 40 * 2**30)
    assert compile_pass.stand_in_room("cuda") == 10 * 2**30


def test_a_batchs_setup_reads_and_opens_the_device_before_the_lock_and_makes_data_under_it(
        tmp_path, monkeypatch):
    """The host work of a batch's setup (the saved cases, the task, CUDA's context) is done before the
    lock is asked for; the inputs and the reference's outputs are made under it."""
    from tests.tree.fakes import tiny_task

    lock = timing_gpu.lock_file(tmp_path, 0)
    events = []
    monkeypatch.setattr(trusted_batch, "read_inputs",
                        lambda path: events.append(("read", held_elsewhere(lock))) or {"cases": []})
    monkeypatch.setattr(trusted_batch, "_open_device",
                        lambda device, gpu_lock: events.append(("open", held_elsewhere(lock), gpu_lock)))
    monkeypatch.setattr(trusted_batch, "regenerate",
                        lambda saved, device: events.append(("inputs", held_elsewhere(lock))) or saved)
    monkeypatch.setattr(trusted_batch, "_expected",
                        lambda *a: events.append(("expected", held_elsewhere(lock))) or [])
    monkeypatch.setattr(trusted_batch, "resident_budget", lambda device: 1e9)
    task = tiny_task()
    result = trusted_batch.tree_batch(task.name, task.source, "/inputs.pt", "cpu", [], [], False, False, {},
                                      gpu_lock=lock)
    assert events == [("read", False), ("open", False, lock), ("inputs", True), ("expected", True)]
    assert {"setup_s", "setup_wait_s", "setup_host_s"} <= set(result)


def test_in_one_gpu_mode_the_reference_outputs_keep_to_what_the_inputs_leave_of_the_share(monkeypatch):
    """One-GPU mode raises the resident share to hold a job's inputs and outputs together
    (tree_one_gpu.sh): the outputs get what the inputs on the device leave of it. Other modes: the
    share for the outputs alone, as before."""
    monkeypatch.setattr(trusted_batch, "resident_budget", lambda device: 1000.0)
    on_device = torch.empty(100, device="meta")  # 400 bytes on a "device"; host tensors do not count
    data = {"cases": [{"inputs": [on_device, 3]}, {"inputs": [torch.zeros(100)]}]}
    assert trusted_batch._outputs_room(data, "cuda", "/lock") == 600.0
    assert trusted_batch._outputs_room(data, "cuda", None) == 1000.0
    data["cases"][1]["inputs"] = [on_device, on_device, on_device]
    assert trusted_batch._outputs_room(data, "cuda", "/lock") == 0.0


class _Engine:
    """What batch._alone uses of an Engine in one-GPU mode."""

    class settings:
        timeout_s, strict, timing = 10.0, False, {}
        tf32_follows_eager = True

    class pool:
        gpu_lock = True
        jobs: list = []

        @classmethod
        def run(cls, job, args, timeout_s):
            cls.jobs.append((job, [p["digest"] for p in args["programs"]]))
            return Outcome("signal", "SIGSEGV", ""), None

    device_type = "cuda"
    outcome_verdict = Engine.outcome_verdict

    def verify(self, task, program):
        raise AssertionError("the full protocol's comparisons would run kernels outside the lock")


def test_in_one_gpu_mode_a_failed_batchs_programs_are_judged_as_batches_of_one():
    from mtmc.program import Program
    from mtmc.verify.judging import Reference
    from tests.tree.fakes import tiny_task

    reference = Reference([], [], None, "/inputs.pt", None)
    program = Program("x = 1\n")
    verdict = _alone(_Engine(), tiny_task(), program, reference)
    assert _Engine.pool.jobs == [("tree_batch", [program.digest])]
    assert verdict.status == Status.CRASH and "SIGSEGV" in verdict.message
