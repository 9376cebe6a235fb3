"""The trusted children (mtmc/verify/trusted.py): each task's reference and baselines are made
once, however many threads judge it, and different tasks' are made at the same time."""

import threading

import pytest
from corpus_index import TASKS

from mtmc.tasks import load_task
from mtmc.verify.engine import Settings
from mtmc.verify.forkserver import Outcome
from mtmc.verify.integrity import Seal
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
        return Outcome("done"), {"expected": expected, "timing_expected": None, "eager_tf32": False}


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
