"""SFT warm start: a short run on recorded choices of X makes the LM planner propose X.

    pytest tests/train/test_sft.py
"""

from __future__ import annotations

import pytest
import torch
from trl import SFTConfig

from mtmc.lm_policy import render_prompt
from mtmc.program import Program
from mtmc.protocols import PlanState, StepRecord
from mtmc.strategies import Strategy
from mtmc.tasks import load_task, summarize
from mtmc.train.data import load_runs, sft_examples
from mtmc.train.sft import train_sft, underfit_warning
from mtmc.train.tiny import build_tiny
from planners.lm import LMPlanner
from tests.train.runs import write_run

MENU = ["vectorize", "tile BLOCK=2048", "num_warps 8", "autotune", "stop"]


def sft_args(out, **overrides) -> SFTConfig:
    args = dict(output_dir=str(out), max_steps=30, learning_rate=3e-3, per_device_train_batch_size=8,
                completion_only_loss=True, logging_steps=1, save_strategy="no", report_to="none", bf16=False,
                gradient_checkpointing=False, seed=0)
    return SFTConfig(**(args | overrides))


def save(model, tokenizer, folder):
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.mark.parametrize("seed", [0, 1, 2])  # three random initialisations: three different untrained picks
def test_sft_on_recorded_choices_of_x_makes_the_planner_propose_x(tmp_path, seed):
    task = load_task("scale_bias_rows")
    history = [StepRecord(0, "port", "ok", True, None, 0.2)]
    state = PlanState(task=task, summary=summarize(task), program=Program(""), verdict=None,
                      legal=[Strategy.parse(s) for s in MENU], history=history, steps_left=11)
    prompt = render_prompt(state.summary, history, 11)
    model, tokenizer = build_tiny([prompt, *MENU], seed=seed)
    before = LMPlanner(save(model, tokenizer, tmp_path / "before")).propose(state)
    x = next(s for s in MENU if s not in (str(before), "stop"))  # a step the untrained planner does not pick

    # eight recorded runs that port, then take x, then run out of budget
    for i in range(8):
        write_run(tmp_path / "runs" / f"r{i}", task.name, [("port", ["ok"]), (x, ["ok"])], max_steps=12,
                  stop_reason="max_steps")
    examples = sft_examples(load_runs([tmp_path / "runs"]))
    assert {e["completion"] for e in examples if e["prompt"] == prompt} == {f" {x}"}

    first = [p.detach().clone() for p in model.parameters()]
    history_log = train_sft(model, tokenizer, examples, sft_args(tmp_path / "sft"))
    losses = [entry["loss"] for entry in history_log if "loss" in entry]
    assert losses[-1] < losses[0] / 4
    assert any(not torch.equal(a, b) for a, b in zip(first, model.parameters(), strict=True))
    after = LMPlanner(save(model, tokenizer, tmp_path / "after")).propose(state)
    assert str(after) == x != str(before)
    assert underfit_warning(history_log) is None  # it fit: no warning


def test_an_sft_run_that_did_not_fit_is_named(tmp_path):
    examples = [{"prompt": "ops softmax next:", "completion": " tile BLOCK=2048"}] * 8
    model, tokenizer = build_tiny([e["prompt"] + e["completion"] for e in examples], seed=0)
    history_log = train_sft(model, tokenizer, examples, sft_args(tmp_path, max_steps=1, learning_rate=1e-7))
    warning = underfit_warning(history_log)
    assert warning is not None and "token accuracy 0." in warning and "sft.num_train_epochs" in warning


@pytest.mark.parametrize(("log", "warns"), [
    ([{"loss": 5.1, "mean_token_accuracy": 0.0}], True),
    ([{"mean_token_accuracy": 0.2}, {"mean_token_accuracy": 0.95}, {"train_loss": 1.0}], False),
    ([{"mean_token_accuracy": 1.0}, {"mean_token_accuracy": 0.5}], True),  # the last value counts
    ([{"train_loss": 1.0}], False),  # nothing logged: nothing to say
])
def test_underfit_warning_reads_the_last_token_accuracy(log, warns):
    assert (underfit_warning(log) is not None) == warns


def test_sft_refuses_to_train_on_the_prompt(tmp_path):
    model, tokenizer = build_tiny(["a b"], seed=0)
    with pytest.raises(ValueError, match="completion_only_loss must be true"):
        train_sft(model, tokenizer, [{"prompt": "a", "completion": " b"}],
                  sft_args(tmp_path, completion_only_loss=False))
    with pytest.raises(ValueError, match="no examples"):
        train_sft(model, tokenizer, [], sft_args(tmp_path))
