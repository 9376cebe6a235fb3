"""Recorded runs -> SFT examples and GRPO states: what is kept, the rebuilt prompts, refused data.

    pytest tests/train/test_data.py
"""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from mtmc.budgets import Budgets
from mtmc.lm_policy import state_prompt
from mtmc.optimize import run_optimize
from mtmc.tasks.task import task_from_file
from mtmc.train.data import DataError, load_runs, plan_states, sft_examples
from mtmc.verify.verdict import TF32_BEYOND_EAGER, Status
from tests.graph.fakes import TASK_SOURCE, TaggedVerifier
from tests.scripted_coder import ScriptedCoder
from tests.scripted_planner import ScriptedPlanner
from tests.train.runs import write_run

RUN = [("port", ["ok"]), ("vectorize", ["incorrect", "ok"]), ("autotune", ["compile_error"])]


def test_sft_keeps_the_accepted_steps_and_the_demonstrators_stop(tmp_path):
    write_run(tmp_path / "bench" / "scale_bias_rows", "scale_bias_rows", RUN, max_steps=12)
    examples = sft_examples(load_runs([tmp_path / "bench"]))
    assert [e["completion"] for e in examples] == [" port", " vectorize", " stop"]  # autotune was rejected
    port, vectorize, stop = (e["prompt"].splitlines() for e in examples)
    assert "history none" in port and port[-2:] == ["steps_left 12", "next:"]
    assert "step 0 port status ok accepted speedup -" in vectorize and vectorize[-2] == "steps_left 11"
    # a retried step is recorded once, with its last attempt
    assert "step 1 vectorize status ok accepted speedup -" in stop
    assert "step 2 autotune status compile_error rejected speedup -" in stop and stop[-2] == "steps_left 9"


def test_grpo_states_carry_what_the_reward_replays(tmp_path):
    write_run(tmp_path / "a", "scale_bias_rows", RUN)
    write_run(tmp_path / "b", "sum_lastdim", RUN[:2], max_steps=2, stop_reason="max_steps")
    states = plan_states(load_runs([tmp_path]))
    assert [(s["task"], s["step"], s["accepted"]) for s in states] == [
        ("scale_bias_rows", 0, []), ("scale_bias_rows", 1, ["port"]),
        ("scale_bias_rows", 2, ["port", "vectorize"]), ("scale_bias_rows", 3, ["port", "vectorize"]),
        ("sum_lastdim", 0, []), ("sum_lastdim", 1, ["port"])]  # no stop state: the budget ended it
    assert states[0]["previous"] == "" and json.loads(states[3]["previous"])["status"] == "ok"
    examples = sft_examples(load_runs([tmp_path / "b"]))
    assert [e["completion"] for e in examples] == [" port", " vectorize"]  # no stop to imitate


def test_prompts_are_the_ones_the_planner_saw_during_the_run(tmp_path):
    """The run is real (scripted roles through the optimize graph): the prompts rebuilt from its
    trajectory.jsonl must equal, byte for byte, what the planner was shown at each step."""
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "tiny_relu.py").write_text(TASK_SOURCE)
    task = task_from_file(tmp_path / "suite" / "tiny_relu.py")

    class Recording(ScriptedPlanner):
        def __init__(self, steps):
            super().__init__(steps)
            self.shown: list[str] = []

        def propose(self, state):
            self.shown.append(state_prompt(state))
            return super().propose(state)

    class Refusing(TaggedVerifier):  # an incorrect verdict names its cause, as the TF32 refusal does
        def verify(self, task, program):
            verdict = super().verify(task, program)
            verdict.reason = TF32_BEYOND_EAGER if verdict.status == Status.INCORRECT else ""
            return verdict

    planner = Recording(["port", "tile BLOCK=1024", "vectorize", "num_warps 8"])
    coder = ScriptedCoder({"tile BLOCK=1024": ["incorrect"], "vectorize": ["compile_error", "ok@0.5"]})
    run_optimize(task, planner, coder, Refusing(eager_ms=1.0), tmp_path / "run",
                 budgets=Budgets(max_steps=8, max_retries=1, time_limit_s=None),
                 console=Console(file=io.StringIO()))

    (run,) = load_runs([tmp_path / "run"], suite=str(tmp_path / "suite"))
    assert [run.prompt(i) for i in range(len(planner.shown))] == planner.shown
    assert "speedup 2.00x" in planner.shown[-1]  # the timed vectorize step, as the planner saw it
    assert "step 1 tile BLOCK=1024 status incorrect rejected speedup - reason tf32_beyond_eager" in \
        planner.shown[-1].splitlines()
    examples = sft_examples([run])
    assert [e["completion"] for e in examples] == [" port", " vectorize", " num_warps 8", " stop"]


# ---------------------------------------------------------------------------------------------------
# refused data


def test_a_run_of_an_eval_task_is_refused(tmp_path):
    write_run(tmp_path / "train_task", "scale_bias_rows", RUN)
    write_run(tmp_path / "eval_task", "softplus", RUN)  # softplus is in the eval split
    with pytest.raises(DataError, match="'softplus' belongs to the eval split"):
        load_runs([tmp_path])


def test_no_data_is_refused(tmp_path):
    with pytest.raises(DataError, match="no data folders given"):
        load_runs([])
    with pytest.raises(DataError, match="no such data folder"):
        load_runs([tmp_path / "missing"])
    with pytest.raises(DataError, match="no finished run"):
        load_runs([tmp_path])


def test_an_unfinished_run_is_skipped_and_a_run_with_nothing_accepted_teaches_nothing(tmp_path):
    write_run(tmp_path / "failed", "scale_bias_rows", [("port", ["compile_error"])], stop_reason="max_steps")
    (write_run(tmp_path / "killed", "sum_lastdim", RUN) / "result.json").unlink()
    runs = load_runs([tmp_path])
    assert [r.task.name for r in runs] == ["scale_bias_rows"]
    with pytest.raises(DataError, match="no accepted step in 1 run"):
        sft_examples(runs)


def test_a_task_missing_from_the_suite_names_the_folder(tmp_path):
    write_run(tmp_path / "x", "not_a_builtin", RUN)
    with pytest.raises(DataError, match=r"x: task 'not_a_builtin' is not in the suite"):
        load_runs([tmp_path])


def test_prompts_show_the_current_programs_share_of_the_floor(tmp_path):
    folder = write_run(tmp_path / "bench" / "scale_bias_rows", "scale_bias_rows", RUN)
    records = [json.loads(line) for line in (folder / "trajectory.jsonl").read_text().splitlines()]
    records[0]["verdict"] |= {"candidate_ms": 1.25, "roofline_ms": 1.0}  # the port, timed on a GPU
    (folder / "trajectory.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    prompts = [e["prompt"].splitlines() for e in sft_examples(load_runs([tmp_path / "bench"]))]
    assert prompts[0][-3] == "floor -"  # before the port: no program
    assert prompts[1][-3] == "floor 0.80"  # the port's verdict
    assert prompts[2][-3] == "floor -"  # vectorize was accepted, untimed
