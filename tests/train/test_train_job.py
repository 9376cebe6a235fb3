"""`mtmc train` end to end on the CPU: recorded runs -> SFT then GRPO on the tiny model -> checkpoint,
curves, and the eval table (trained vs random vs heuristic) on one eval-split task.

    pytest tests/train/test_train_job.py
"""

from __future__ import annotations

import csv
import subprocess
import sys

import pytest
from omegaconf import OmegaConf

from mtmc.jobs.train import build_model, run
from planners.lm import LMPlanner
from tests.train.runs import write_run


def mtmc(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mtmc.cli", *args], capture_output=True, text=True,
                          timeout=600)


def test_train_both_stages_then_evaluate(tmp_path):
    runs, out = tmp_path / "runs", tmp_path / "out"
    write_run(runs / "scale_bias_rows", "scale_bias_rows", [("port", ["ok"]), ("vectorize", ["ok"])])
    write_run(runs / "sum_lastdim", "sum_lastdim", [("port", ["ok"]), ("tile BLOCK=2048", ["ok"])])
    done = mtmc("train", f"data=[{runs}]", "stage=both", "verifier=interpreter", f"out={out}",
                "sft.num_train_epochs=2", "grpo.max_steps=1", "grpo.per_device_train_batch_size=4",
                "grpo.num_generations=4", "eval.tasks=[softplus]", "eval.max_steps=2")
    assert done.returncode == 0, done.stderr[-3000:]

    planner = LMPlanner(str(out / "checkpoint"))  # loads as `planner=lm planner.checkpoint=<out>/checkpoint`
    # the tiny vocabulary holds the legal steps GRPO sampled, not only the recorded ones
    assert planner.tokenizer.convert_tokens_to_ids("BLOCK=256") != planner.tokenizer.unk_token_id
    with (out / "train_log.csv").open() as f:
        assert {row["stage"] for row in csv.DictReader(f)} == {"sft", "grpo"}
    assert (out / "train_curves.png").stat().st_size > 0
    with (out / "eval" / "eval.csv").open() as f:
        table = list(csv.DictReader(f))
    assert [(r["planner"], r["tasks"]) for r in table] == [("lm", "1"), ("random", "1"), ("heuristic", "1")]
    assert (out / "eval" / "lm" / "softplus" / "trajectory.jsonl").is_file()
    assert "| lm | 1/1 |" in (out / "eval" / "eval.md").read_text()

    again = mtmc("train", f"data=[{runs}]", f"out={out}", "eval.enabled=false")
    assert again.returncode == 1 and "already holds a trained planner" in again.stderr


def test_train_refuses_a_run_of_an_eval_task(tmp_path):
    write_run(tmp_path / "runs" / "softplus", "softplus", [("port", ["ok"])])
    done = mtmc("train", f"data=[{tmp_path / 'runs'}]", f"out={tmp_path / 'out'}")
    assert done.returncode == 1
    assert "task 'softplus' belongs to the eval split" in done.stderr
    assert not (tmp_path / "out" / "checkpoint").exists()


def test_bad_stage_and_missing_model_are_one_line_errors(tmp_path):
    with pytest.raises(SystemExit, match="stage=rl: use one of sft, grpo, both"):
        run(OmegaConf.create({"stage": "rl"}))
    with pytest.raises(SystemExit, match="grpo_rollout=beam: use one of legal, free"):
        run(OmegaConf.create({"stage": "both", "grpo_rollout": "beam"}))
    with pytest.raises(SystemExit, match=f"mtmc train: {tmp_path / 'nope'}: no such checkpoint folder"):
        build_model(OmegaConf.create({"model": str(tmp_path / "nope"), "seed": 0}), [])
