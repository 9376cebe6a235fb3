"""`run_optimize` end to end on scripted fakes: the run folder's files, and resuming after kill -9.

    pytest tests/graph/test_optimize.py
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from mtmc.budgets import Budgets
from mtmc.optimize import CHECKPOINTS, THREAD_ID, run_optimize
from tests.graph import crash_run
from tests.graph.fakes import TaggedVerifier, tiny_task
from tests.scripted_coder import ScriptedCoder
from tests.scripted_planner import ScriptedPlanner

ROOT = Path(__file__).resolve().parents[2]


def quiet() -> Console:
    return Console(file=io.StringIO(), width=120)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def without_wall(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "wall_s"} for r in records]


# ---------------------------------------------------------------------------------------------------
# outputs


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("reference")
    return crash_run.optimize(out, console=quiet()), out


def test_outputs_of_a_run(reference_run):
    result, out = reference_run
    assert {p.name for p in out.iterdir()} >= {"kernel.py", "trajectory.jsonl", "report.md", "speedup.png",
                                                "result.json", CHECKPOINTS}
    trajectory = read_jsonl(out / "trajectory.jsonl")
    assert len(trajectory) == crash_run.ATTEMPTS == len(result.trajectory)
    assert [(r["step"], r["attempt"], r["outcome"]) for r in trajectory] == [
        (0, 0, "accepted"), (1, 0, "retry"), (1, 1, "rejected"), (2, 0, "rejected"), (3, 0, "retry"),
        (3, 1, "rejected"), (4, 0, "accepted"), (5, 0, "accepted")]
    assert trajectory[4]["status"] == "compile_error" and "vector width" in trajectory[4]["message"]

    summary = json.loads((out / "result.json").read_text())
    assert summary["stop_reason"] == "planner_stop" and summary["steps"] == 6
    assert summary["accepted_steps"] == 3 and summary["speedup_eager"] == pytest.approx(2.5)
    assert summary["return"] == pytest.approx(result.total_reward)
    assert summary["usage"] == {"prompt_tokens": 5 * 6}  # six programs came back from the coder

    report = (out / "report.md").read_text()
    assert "| 2 | 0 | `tile BLOCK=1024` | rejected | ok | 0.67x |" in report
    assert "speedup vs eager 2.50x" in report
    assert (out / "speedup.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_kernel_py_is_the_final_program_and_imports(reference_run):
    result, out = reference_run
    assert (out / "kernel.py").read_text() == result.program.source
    spec = importlib.util.spec_from_file_location("kernel_under_test", out / "kernel.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.ModelNew().forward(3) == 3


def test_untimed_run_says_so_and_no_program_means_no_kernel(tmp_path):
    coder = ScriptedCoder({"port": ["incorrect"]})
    result = run_optimize(tiny_task(), ScriptedPlanner(["port", "port"]), coder, TaggedVerifier(), tmp_path,
                          budgets=Budgets(max_steps=5, max_retries=0, time_limit_s=60), console=quiet())
    assert result.program is None and not (tmp_path / "kernel.py").exists()
    assert "no kernel.py" in (tmp_path / "report.md").read_text()
    assert json.loads((tmp_path / "result.json").read_text())["kernel"] is None


def test_a_folder_holds_one_run(tmp_path, reference_run):
    _, out = reference_run
    with pytest.raises(ValueError, match="already holds a run"):
        crash_run.optimize(out, console=quiet())
    with pytest.raises(FileNotFoundError, match="no run to resume"):
        crash_run.optimize(tmp_path, resume=True, console=quiet())


def test_resuming_a_finished_run_rewrites_the_same_outputs(tmp_path, reference_run):
    _, out = reference_run
    before = {name: (out / name).read_text() for name in ("trajectory.jsonl", "report.md", "kernel.py")}
    crash_run.optimize(out, resume=True, console=quiet())
    assert {name: (out / name).read_text() for name in before} == before


# ---------------------------------------------------------------------------------------------------
# crash and resume


def committed_attempts(db: Path) -> int:
    """Attempts saved in the latest checkpoint, or by a node that ended after it (its pending writes):
    a resume does not run these again."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    with SqliteSaver.from_conn_string(str(db)) as saver:
        checkpoint = saver.get_tuple({"configurable": {"thread_id": THREAD_ID}})
    if checkpoint is None:
        return 0
    pending = sum(len(value) for _, channel, value in checkpoint.pending_writes if channel == "trajectory")
    return len(checkpoint.checkpoint["channel_values"].get("trajectory", [])) + pending


def start_crash_run(out: Path, log: Path, *extra: str) -> subprocess.Popen:
    with log.open("w") as sink:  # a file, not a pipe: a full pipe would stall the child
        return subprocess.Popen([sys.executable, str(ROOT / "tests/graph/crash_run.py"), str(out), *extra],
                                cwd=ROOT, stdout=sink, stderr=subprocess.STDOUT)


def resume_and_compare(out: Path, reference: Path, done_before: int) -> None:
    """Resume the killed run in `out`: only its missing attempts run, and its files equal `reference`'s."""
    console = quiet()
    resumed = crash_run.optimize(out, resume=True, console=console)
    printed = [line for line in console.file.getvalue().splitlines() if line.strip()[:1].isdigit()]
    assert len(printed) == crash_run.ATTEMPTS - done_before  # only the missing attempts ran again

    trajectory = read_jsonl(out / "trajectory.jsonl")
    keys = [(r["step"], r["attempt"]) for r in trajectory]
    assert len(keys) == len(set(keys)) == crash_run.ATTEMPTS  # nothing lost, nothing repeated
    expected = without_wall(read_jsonl(reference / "trajectory.jsonl"))
    for got, want in zip(without_wall(trajectory), expected, strict=True):
        changed = {k: (got.get(k), want.get(k))
                   for k in got.keys() | want.keys() if got.get(k) != want.get(k)}
        assert got == want, changed
    for name in ("kernel.py", "report.md"):
        assert (out / name).read_text() == (reference / name).read_text(), name
    result, expected = (json.loads((d / "result.json").read_text()) for d in (out, reference))
    assert {k: v for k, v in result.items() if k != "elapsed_s"} == \
           {k: v for k, v in expected.items() if k != "elapsed_s"}
    assert resumed.stop_reason == "planner_stop"


def test_kill_9_mid_run_then_resume_equals_an_uninterrupted_run(tmp_path, reference_run):
    _, reference = reference_run
    out, log = tmp_path / "run", tmp_path / "crash_run.log"
    proc = start_crash_run(out, log, "0.25")
    live = out / "trajectory.jsonl"
    deadline = time.monotonic() + 60
    # Kill once two attempts are checkpointed. An attempt's line is appended while its node runs
    # and the checkpoint follows when the node ends, so three lines mean at least two checkpointed.
    # (Polling the checkpoint database itself made the run's own SQLite setup fail as "locked".)
    # Each attempt sleeps 0.25 s, so the run is mid-way then.
    while not (live.is_file() and len(live.read_text().splitlines()) >= 3):
        assert proc.poll() is None, f"the run ended before the kill: {log.read_text()[-2000:]}"
        assert time.monotonic() < deadline, "the run made no progress"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = committed_attempts(out / CHECKPOINTS)
    # killed mid-run, inside the retry of step 1 or just after it, with attempts in the checkpoint
    assert 2 <= done_before < crash_run.ATTEMPTS
    resume_and_compare(out, reference, done_before)


# A run writes 33 checkpoints. Dying in place of one leaves the writes of the node before it saved
# and the checkpoint after it missing: LangGraph's snapshot.next is empty then (that node has
# results), which once made a resume think the run had finished. The default suite dies at 3 (after
# baseline) and 15 (after a code node), both of which that resume got wrong, at 21 (after a gate node:
# its attempt record is a pending write, so it is not run again) and at 33 (after finish); `-m slow`
# tries every checkpoint.
KILL_POINTS = [3, 15, 21, 33]
EVERY_KILL_POINT = [pytest.param(n, marks=pytest.mark.slow) for n in range(2, 34) if n not in KILL_POINTS]


@pytest.mark.parametrize("checkpoint", KILL_POINTS + EVERY_KILL_POINT)
def test_kill_9_between_a_node_and_its_checkpoint_then_resume(tmp_path, reference_run, checkpoint):
    _, reference = reference_run
    out, log = tmp_path / "run", tmp_path / "crash_run.log"
    proc = start_crash_run(out, log, "0", str(checkpoint))
    assert proc.wait(timeout=120) == -signal.SIGKILL, log.read_text()[-2000:]
    resume_and_compare(out, reference, committed_attempts(out / CHECKPOINTS))


def test_checkpoints_keep_only_the_latest_state_so_the_file_grows_linearly(tmp_path):
    """Every checkpoint holds the whole state (the trajectory grows by a record an attempt), so
    keeping them all grew the file with the square of the steps: 40 steps made 165 checkpoints and
    3.4 MB (BENCHMARKS.md). Resume needs only the newest one and its pending writes."""
    import sqlite3

    from tests.graph.fakes import TaggedVerifier as Verifier

    def size_after(steps: int) -> tuple[int, int]:
        out = tmp_path / str(steps)
        plan = ["port"] + ["tile BLOCK=1024"] * (steps - 1)  # each tile step is slower: rejected
        run_optimize(tiny_task(), ScriptedPlanner(plan), ScriptedCoder({"port": ["ok@2.0"],
                     "tile BLOCK=1024": ["ok@3.0"]}), Verifier(eager_ms=2.0), out,
                     budgets=Budgets(max_steps=steps, max_retries=0, time_limit_s=600.0), console=quiet())
        with sqlite3.connect(out / CHECKPOINTS) as db:
            rows = db.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0]
        return rows, sum(p.stat().st_size for p in out.glob(CHECKPOINTS + "*"))  # with -wal and -shm

    (rows_10, size_10), (rows_40, size_40) = size_after(10), size_after(40)
    assert rows_10 == rows_40 == 1
    assert size_40 < 2 * size_10  # all-checkpoints growth: 3.4 MB against 0.48 MB, 7x
