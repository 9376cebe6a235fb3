"""The trusted children (mtmc/verify/trusted.py): each task's reference and baselines are made
once, however many threads judge it, and different tasks' are made at the same time."""

import threading

import pytest
from corpus_index import TASKS

from mtmc.tasks import Task, load_task
from mtmc.verify.engine import LARGE_CASE_BYTES, Settings
from mtmc.verify.forkserver import Outcome
from mtmc.verify.integrity import Seal
from mtmc.verify.protocol import case_bytes
from mtmc.verify.trusted import TrustedRuns


class MeetingPool:
    """A pool whose reference and baseline jobs wait until `meet` of them run at once (a serial
    caller never gets there: the barrier breaks after its timeout), and count themselves."""

    def __init__(self, tmp_path, meet: int) -> None:
        self.tmp_path, self.barrier = tmp_path, threading.Barrier(meet, timeout=10)
        self.jobs: list[str] = []

    def data_dir(self, name):
        (self.tmp_path / name).mkdir(exist_ok=True)
        return self.tmp_path / name

    def run(self, job, args, timeout_s):
        self.jobs.append(job)
        self.barrier.wait()
        if job == "baseline":
            return Outcome("done"), {"timings": {"eager": {"reported_ms": 1.0}}, "compile_error": None}
        open(args["inputs_path"], "wb").close()
        expected = [{"outputs": []} for _ in args["cases"]]
        return Outcome("done"), {"expected": expected, "timing_expected": None, "eager_tf32": False,
                                 "input_checks": [[] for _ in args["cases"]]}


def trusted(pool):
    return TrustedRuns(pool, Settings(seeds=1, seed=0), "cpu", Seal(), base_seed=0)


def in_threads(calls):
    errors = []

    def run(call):
        try:
            call()
        except BaseException as err:  # noqa: BLE001  (reported by the test)
            errors.append(err)
    threads = [threading.Thread(target=run, args=(c,)) for c in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors, errors


@pytest.mark.parametrize("job", ["reference", "baseline"])
def test_two_tasks_trusted_jobs_run_at_the_same_time(tmp_path, job):
    runs = trusted(MeetingPool(tmp_path, meet=2))
    tasks = [load_task(TASKS / "softmax.py"), load_task(TASKS / "pointwise.py")]
    if job == "reference":
        in_threads([lambda t=t: runs.reference(t) for t in tasks])
    else:
        runs.pool.barrier = threading.Barrier(1)  # the references one at a time first
        references = [runs.reference(t) for t in tasks]
        runs.pool.barrier = threading.Barrier(2, timeout=10)
        in_threads([lambda t=t, r=r: runs.baseline(t, r) for t, r in zip(tasks, references, strict=True)])
    assert runs.pool.jobs.count(job) == 2


def test_one_tasks_reference_and_baselines_are_made_once_for_many_threads(tmp_path):
    runs = trusted(MeetingPool(tmp_path, meet=1))
    task = load_task(TASKS / "softmax.py")
    in_threads([lambda: runs.baseline(task, runs.reference(task)) for _ in range(4)])
    assert runs.pool.jobs == ["reference", "baseline"]


class RecordingPool(MeetingPool):
    """Records each reference job's cases; fails a job whose cases include `failing` sizes."""

    def __init__(self, tmp_path, failing=None) -> None:
        super().__init__(tmp_path, meet=1)
        self.cases, self.failing = [], failing

    def run(self, job, args, timeout_s):
        self.cases.append(args["cases"])
        if self.failing and any(self.failing(c["sizes"]) for c in args["cases"]):
            return Outcome("exit", "exit code 1", "RuntimeError: too small"), None
        return super().run(job, args, timeout_s)


def planned(tmp_path, budget, failing=None, task=None, device="cpu"):
    pool = RecordingPool(tmp_path, failing)
    runs = TrustedRuns(pool, Settings(seeds=3, seed=0, large_case_bytes=budget), device, Seal(), base_seed=0)
    return runs.reference(task or load_task(TASKS / "pointwise.py")), pool


def test_large_cases_get_one_full_size_seed_and_the_rest_at_a_small_size(tmp_path):
    """pointwise's first CPU size has 8000 bytes of inputs and 4000 of outputs: over a 2000-byte
    budget it gets one seed, its second size one, and three seeds go to a drawn small size whose
    inputs and outputs each fit an eighth of it."""
    reference, pool = planned(tmp_path, 2000)
    sizes = [c["sizes"] for c in reference.cases]
    assert sizes[:2] == [{"n": 1000}, {"n": 257}]
    small = sizes[2:]
    assert len(small) == 3 and all(s == small[0] for s in small)
    assert small[0]["n"] % 2 == 1 and 2 * small[0]["n"] * 4 <= 2000 // 8  # two inputs of n floats
    assert len({(c["input_seed"], repr(c["sizes"])) for c in reference.cases}) == 5  # no case twice
    assert "1 seed at the declared size" in reference.plan and str(small[0]) in reference.plan
    assert "GiB of inputs a case" in reference.plan
    assert any(f.startswith("large_case_plan: ") for f in reference.flags)


def test_cases_within_the_budget_keep_the_full_plan(tmp_path):
    for budget in (8000, 0):  # 8000: pointwise's inputs a case, not past it; 0: the plan is off
        (tmp_path / str(budget)).mkdir()
        reference, _ = planned(tmp_path / str(budget), budget)
        assert [c["sizes"]["n"] for c in reference.cases] == [1000] * 3 + [257] * 3
        assert reference.plan == "" and not reference.flags


def test_a_small_size_the_reference_cannot_run_falls_back_to_the_full_plan(tmp_path):
    reference, pool = planned(tmp_path, 2000, failing=lambda sizes: sizes["n"] < 257)
    assert len(pool.cases) == 2
    assert [c["sizes"]["n"] for c in reference.cases] == [1000] * 3 + [257] * 3
    assert reference.plan == "" and reference.flags[0].startswith("no_small_size: the reference fails at")


# A 2-D average pool over 16 GiB of fp32 inputs a case, whose outputs take 0.13 GiB (KernelBench level
# 1's largest pool has this shape): verifier 2.5 keyed the plan on the outputs alone, so its three
# full-size seeds and a derived size (about 58 GB of inputs, all parked in host memory) took the
# candidate's job past the 120 s limit on an H100, copying 16 GiB into the GPU at every call.
BIG_POOL = Task(name="big_pool", source="""
import torch
import torch.nn as nn

batch_size, channels, height, width = 16, 64, 2048, 2048


class Model(nn.Module):
    def __init__(self, kernel_size):
        super().__init__()
        self.pool = nn.AvgPool2d(kernel_size)

    def forward(self, x):
        return self.pool(x)


def get_inputs():
    return [torch.rand(batch_size, channels, height, width)]


def get_init_inputs():
    return [11]
""")


def test_a_case_whose_inputs_pass_the_budget_takes_the_large_case_plan(tmp_path):
    """At the default 4 GiB budget the pool's 16 GiB of inputs take the plan, though its outputs fit:
    one seed at the declared size, still checked and the only timing set, and three at a small size
    whose inputs fit 512 MiB (traced on the meta device: nothing of that size is made here)."""
    assert case_bytes(BIG_POOL, {}) == (16 * 2**30, 16 * 64 * 186 * 186 * 4)
    reference, pool = planned(tmp_path, LARGE_CASE_BYTES, task=BIG_POOL, device="cuda")
    assert len(pool.cases) == 1  # one reference job, on the plan
    full, *small = [c["sizes"] for c in reference.cases]
    assert full == {} and len(small) == 3 and all(s == small[0] for s in small)
    assert max(case_bytes(BIG_POOL, small[0])) <= LARGE_CASE_BYTES // 8
    assert reference.timing_sets == [0]  # the full-size case is the one timed
    assert "16.0 GiB of inputs a case, over the 4 GiB budget" in reference.plan
    assert any(f.startswith("large_case_plan: ") for f in reference.flags)


def test_a_trusted_batch_gets_the_outline_of_a_reference_let_go_and_the_full_protocol_a_new_one(
        tmp_path, monkeypatch):
    """Past REFERENCES_KEPT the oldest task's outputs are let go; a trusted batch (outputs=False),
    whose child makes them itself, then gets the reference's outline (cases, inputs file, floors)
    and no reference job runs again; the full protocol (outputs=True) runs it again for its outputs."""
    from mtmc.verify import trusted as trusted_module

    monkeypatch.setattr(trusted_module, "REFERENCES_KEPT", 1)
    runs = trusted(MeetingPool(tmp_path, meet=1))
    first, second = load_task(TASKS / "softmax.py"), load_task(TASKS / "pointwise.py")
    made = runs.reference(first)
    made.expected[0]["reference_errors"] = [0.5]
    runs.reference(second)  # the first one's outputs go
    outline = runs.reference(first, outputs=False)
    assert runs.pool.jobs == ["reference", "reference"]
    assert outline is not made and outline.inputs_path == made.inputs_path and outline.cases == made.cases
    assert outline.expected[0]["outputs"] == [] and outline.expected[0]["reference_errors"] == [0.5]
    assert outline.timing_expected is None and outline.nbytes == 0
    runs.reference(first)  # with its outputs: made again
    assert runs.pool.jobs == ["reference"] * 3
