"""`run_bench` through the real optimize loop with scripted roles: metrics, resumability, GPU workers.

Run: python -m pytest tests/bench/test_run.py -v

Every task is scripted the same way (port at 1.0 ms, then a tile step at 0.5 ms, then stop); the
fake verifier gives each task its own eager and torch.compile times, so every speedup, fast_p and
roofline share below follows from those numbers by hand.
"""

import csv
import json
import math

import pytest
from rich.console import Console

from mtmc.bench import run as run_module
from mtmc.bench import run_bench, write_report
from mtmc.bench.run import CONFIG, TASK_RESULT, FolderInUse
from mtmc.optimize import RunStopped
from tests.bench.fakes import (
    BUDGETS,
    COMPILED,
    EAGER,
    REWARD,
    TASK_BYTES,
    FakeTimedVerifier,
    fake_device,
    tiny_tasks,
)
from tests.bench.fakes import scripted_roles as roles


def bench(tasks, out, roles_, **kwargs):
    with (out.parent / "console.txt").open("a") as f:
        return run_bench(tasks, out, roles=roles_, budgets=BUDGETS, reward=REWARD,
                         console=Console(file=f, width=200), **kwargs)


def console_text(out) -> str:
    return (out.parent / "console.txt").read_text()


def calls(log) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


@pytest.fixture(autouse=True)
def _no_gpu_label(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


def test_metrics_of_a_scripted_suite(tmp_path):
    out = tmp_path / "bench"
    flag = tmp_path / "crash"
    flag.touch()  # task d's verifier raises at its tile step: an error row, the suite goes on
    calibration = {"gpu": fake_device(), "copy_bytes_per_s": 1e9, "matmul_flops": {"float32": 1e12}}
    rows = bench(tiny_tasks("a", "b", "c", "d"), out,
                 roles(crash_flag=str(flag), crash_task="d", crash_step="tile BLOCK=1024"),
                 calibrations=[calibration])

    by = {r["task"]: r for r in rows}
    assert [r["task"] for r in rows] == ["a", "b", "c", "d"]
    for name in "abc":
        r = by[name]
        assert r["correct"] and r["status"] == "ok" and r["candidate_ms"] == 0.5
        assert (r["steps"], r["attempts"], r["verifier_calls"], r["stop_reason"]) == (2, 2, 2, "planner_stop")
        assert r["speedup_eager"] == pytest.approx(EAGER[name] / 0.5)
        assert r["speedup_compiled"] == pytest.approx(COMPILED[name] / 0.5)
        # memory-bound floor: 65536 bytes at 1e9 B/s = 0.065536 ms
        assert r["bytes"] == TASK_BYTES and r["bound"] == "memory"
        assert r["roofline_pct"] == pytest.approx(100 * 0.065536 / 0.5)
        assert r["eager_roofline_pct"] == pytest.approx(100 * 0.065536 / EAGER[name])
        assert r["kernel"] == f"{name}/kernel.py" and (out / name / "kernel.py").is_file()
    assert by["d"]["status"] == "error" and not by["d"]["correct"]
    assert "verifier harness failed on d" in by["d"]["error"]
    assert "RuntimeError" in (out / "d" / "error.txt").read_text()

    agg = write_report(out, rows, {"suite": "fake", "planner": "p", "coder": "c", "verifier": "v"})
    assert (agg["tasks"], agg["correct"], agg["errors"], agg["timed"]) == (4, 3, 1, True)
    # speedups over eager: a 4.0, b 1.6, c 2.0 (not > 2.0: fast_p is strict); d failed but counts
    assert agg["fast_p"]["eager"] == {"1.0": 0.75, "1.2": 0.75, "1.5": 0.75, "2.0": 0.25}
    # over torch.compile: a 2.0, b 0.8, c 1.1
    assert agg["fast_p"]["compiled"] == {"1.0": 0.5, "1.2": 0.25, "1.5": 0.25, "2.0": 0.0}
    assert agg["geomean_speedup_eager"] == pytest.approx(math.exp((math.log(4.0 * 1.6 * 2.0)) / 3))

    saved = json.loads((out / "results.json").read_text())
    assert saved["aggregates"] == json.loads(json.dumps(agg)) and len(saved["tasks"]) == 4
    with (out / "results.csv").open() as f:
        table = list(csv.DictReader(f))
    assert [r["task"] for r in table] == ["a", "b", "c", "d"] and table[0]["correct"] == "True"
    markdown = (out / "results.md").read_text()
    assert "| 2.0 | 25.0% | 0.0% |" in markdown and "| d | error | no |" in markdown
    for plot in ("speedup.png", "fast_p.png"):
        assert (out / plot).stat().st_size > 1000
    lines = [line for line in console_text(out).splitlines() if line.startswith("[")]
    assert len(lines) == 4 and "error" in lines[-1]  # one progress line per finished task


def test_resume_skips_finished_tasks_and_reruns_torn_or_crashed_ones(tmp_path):
    out, log, flag = tmp_path / "bench", tmp_path / "calls.log", tmp_path / "crash"
    roles_ = roles(calls_log=str(log), crash_flag=str(flag), crash_task="b", crash_step="tile BLOCK=1024")
    tasks = tiny_tasks("a", "b", "c")

    flag.touch()  # b crashes at its second step, after the port was checkpointed
    first = bench(tasks, out, roles_)
    assert [r["status"] for r in first] == ["ok", "error", "ok"]
    assert calls(log) == ["a port", "a tile BLOCK=1024", "b port", "b tile BLOCK=1024",
                          "c port", "c tile BLOCK=1024"]

    # Unchanged folder: everything is finished, nothing runs (an error counts as a result).
    before = {name: (out / name / TASK_RESULT).read_bytes() for name in "abc"}
    again = bench(tasks, out, roles_)
    assert again == first and len(calls(log)) == 6
    assert "3 finished earlier (skipped), 0 to run" in console_text(out)

    # A torn bench.json (as a crash in a non-atomic write would leave) is not a result; a missing
    # task folder is run from scratch; retry_errors resumes b from its checkpoint: only the step
    # that crashed is verified again, the port is not.
    torn = (out / "a" / TASK_RESULT).read_text()
    (out / "a" / TASK_RESULT).write_text(torn[: len(torn) // 2])
    for path in sorted((out / "c").iterdir()):
        path.unlink()
    (out / "c").rmdir()
    third = bench(tasks, out, roles_, retry_errors=True)
    assert calls(log)[6:] == ["b tile BLOCK=1024", "c port", "c tile BLOCK=1024"]  # a: resumed, done
    assert [r["status"] for r in third] == ["ok", "ok", "ok"]
    assert third[1]["steps"] == 2 and third[1]["verifier_calls"] == 2  # both steps count once
    assert [r["speedup_eager"] for r in third] == pytest.approx([4.0, 1.6, 2.0])
    assert json.loads((out / "a" / TASK_RESULT).read_text())["row"]["task"] == "a"
    assert (out / "b" / TASK_RESULT).read_bytes() != before["b"]


def test_an_interrupt_stops_the_bench_and_the_task_resumes_instead_of_counting_as_an_error(tmp_path):
    out, log, flag = tmp_path / "bench", tmp_path / "calls.log", tmp_path / "interrupt"
    roles_ = roles(calls_log=str(log), crash_flag=str(flag), crash_task="b", crash_step="tile BLOCK=1024",
                   crash_interrupt=True)
    tasks = tiny_tasks("a", "b", "c")
    flag.touch()  # Ctrl-C while b's second step is verified
    with pytest.raises(RunStopped, match="interrupted"):
        bench(tasks, out, roles_)
    assert not (out / "b" / TASK_RESULT).exists()  # no error row: b is not finished
    assert calls(log) == ["a port", "a tile BLOCK=1024", "b port", "b tile BLOCK=1024"]  # c never started

    rows = bench(tasks, out, roles_)  # resumed: b from its checkpoint (the port is not judged again), c
    assert [r["status"] for r in rows] == ["ok", "ok", "ok"]
    assert calls(log)[4:] == ["b tile BLOCK=1024", "c port", "c tile BLOCK=1024"]


def test_an_interrupted_gpu_worker_leaves_its_task_unfinished_and_takes_no_more(tmp_path):
    out, log, flag = tmp_path / "bench", tmp_path / "calls.log", tmp_path / "interrupt"
    roles_ = roles(sleep_s=0.3, calls_log=str(log), crash_flag=str(flag), crash_task="b", crash_step="port",
                   crash_interrupt=True)
    flag.touch()
    rows = bench(tiny_tasks("a", "b", "c", "d"), out, roles_, gpus=[0, 1])
    by = {r["task"]: r for r in rows}
    assert by["b"]["status"] == "missing" and not (out / "b" / TASK_RESULT).exists()
    assert all(by[name]["correct"] for name in "acd")  # the other worker took the rest
    assert "stopped during b (interrupted)" in console_text(out)


def test_a_folder_never_mixes_two_configurations(tmp_path):
    out = tmp_path / "bench"
    bench(tiny_tasks("a"), out, roles())
    other = roles()
    other["planner"]["steps"] = ["port"]
    with pytest.raises(FolderInUse, match=r"another configuration .*roles.planner"):
        bench(tiny_tasks("a"), out, other)
    assert json.loads((out / CONFIG).read_text())["roles"] == json.loads(json.dumps(roles()))


def test_one_worker_per_gpu_and_a_dead_worker_loses_only_its_task(tmp_path):
    out, log, flag = tmp_path / "bench", tmp_path / "calls.log", tmp_path / "crash"
    # 0.3 s per verification: each task takes long enough that both workers get work.
    roles_ = roles(sleep_s=0.3, calls_log=str(log), crash_flag=str(flag), crash_task="d",
                   crash_step="port", crash_exit=True)
    tasks = tiny_tasks("a", "b", "c", "d")
    flag.touch()
    rows = bench(tasks, out, roles_, gpus=[0, 1])
    by = {r["task"]: r for r in rows}
    assert by["d"]["status"] == "missing" and not (out / "d" / TASK_RESULT).exists()
    assert all(by[name]["correct"] for name in "abc")
    # each worker saw exactly its own GPU, and both GPUs took tasks
    assert {by[name]["device"] for name in "abc"} == {"fake gpu 0", "fake gpu 1"}
    assert "died (exit code 3)" in console_text(out) and "while running d" in console_text(out)

    # Run again (here, no GPUs): only the lost task runs.
    rows = bench(tasks, out, roles_)
    assert [r["status"] for r in rows] == ["ok"] * 4
    assert calls(log).count("d port") == 2 and calls(log).count("a port") == 1


def test_a_concurrent_verifier_runs_that_many_tasks_at_once_here(tmp_path, monkeypatch):
    """verifier=ray's case: one verifier judging 2 programs at once; the bench runs 2 tasks at a time in
    this process (its GPUs are the verifier's: `gpus` is ignored), with the sequential run's rows."""
    monkeypatch.setattr(run_module, "CLUSTER_VERIFIERS", {"tests.bench.fakes.FakeTimedVerifier"})
    monkeypatch.setattr(FakeTimedVerifier, "max_in_flight", 0)
    out, log = tmp_path / "bench", tmp_path / "calls.log"
    tasks = tiny_tasks("a", "b", "c", "d")
    rows = bench(tasks, out, roles(sleep_s=0.3, concurrency=2, calls_log=str(log)), gpus=[0, 1])
    assert FakeTimedVerifier.max_in_flight == 2
    assert [r["task"] for r in rows] == ["a", "b", "c", "d"] and all(r["correct"] for r in rows)
    assert {r["device"] for r in rows} == {"fake gpu -"}  # judged here, no GPU worker spawned
    assert sorted(calls(log)) == sorted(f"{t} {s}" for t in "abcd" for s in ("port", "tile BLOCK=1024"))
    assert "2 tasks at a time" in console_text(out) and console_text(out).count("/4]") >= 4

    sequential = bench(tasks, tmp_path / "sequential", roles(sleep_s=0.0, calls_log=str(tmp_path / "x")))
    drop = {"wall_s", "started", "finished"}
    assert [{k: v for k, v in r.items() if k not in drop} for r in rows] == \
        [{k: v for k, v in r.items() if k not in drop} for r in sequential]
