"""Multi-step GRPO on a tree: states from episodes, the return-to-go reward, and a few GRPO steps with
the tiny model that move it (no coder, no verifier)."""

from __future__ import annotations

import json
import math

import pytest
import torch
from trl import GRPOConfig

from mtmc.strategies import Strategy
from mtmc.train.tiny import build_tiny
from mtmc.train.tree_grpo import TreeReturn, legal_by_prompt, restore, train_tree_grpo, tree_states
from mtmc.tree import TreeEnv, load_tree, task_fingerprint
from planners.greedy import GreedyPlanner
from planners.random import RandomPlanner
from tests.tree.fakes import branching_rows, tiny_task, write_rows

COST = 0.1


@pytest.fixture
def env(tmp_path):
    tree = load_tree(write_rows(tmp_path / "t.jsonl", branching_rows()))
    return TreeEnv(tree, [tiny_task("t")], max_steps=4, call_cost=COST)


def test_states_are_the_distinct_states_episodes_pass_through(env):
    states = tree_states(env, [RandomPlanner(seed=s, stop_prob=0.0) for s in range(6)])
    steps = [tuple(s["steps"]) for s in states]
    assert len(set(steps)) == len(steps) and () in steps and ("port",) in steps
    assert all(s["task"] == "t" and s["prompt"].endswith("next:") for s in states)
    state = restore(env, "t", ["port", "num_warps 8"])
    assert [str(s) for s in state.legal] == ["num_warps 2", "tile BLOCK=1024", "stop"]


def test_a_steps_reward_is_its_return_to_go_with_the_episode_finished_by_the_policy(env):
    reward = TreeReturn(env, policy=GreedyPlanner())
    # num_warps 8 (1 call, 2 -> 1 ms), then greedy: num_warps 2 (slower, 1 call), tile BLOCK=1024 (0.5 ms)
    assert reward.score(" num_warps 8", "t", ["port"]) == pytest.approx(math.log(2.0 / 0.5) - 3 * COST)
    # vectorize fails twice (2 calls); greedy then takes num_warps 8 (1 ms) and num_warps 2 (rejected):
    # the budget of 4 steps is spent
    assert reward.score(" vectorize", "t", ["port"]) == pytest.approx(math.log(2.0 / 1.0) - 4 * COST)
    assert reward.score(" stop", "t", ["port"]) == 0.0
    assert reward.score(" tile BLOCK=1024", "t", ["port"]) == -2.0  # not legal before num_warps 8
    assert reward.score(" no such step", "t", ["port"]) == -2.0
    assert reward(["p"] * 2, [" stop", " num_warps 8"], ["t"] * 2, [["port"]] * 2) == pytest.approx(
        [0.0, math.log(4.0) - 3 * COST])


def test_a_step_sampled_twice_in_a_call_is_played_once_and_rewarded_twice(env):
    reward = TreeReturn(env, policy=GreedyPlanner())
    completions = [" num_warps 8", " vectorize", " num_warps 8", " no such step", " num_warps 8"]
    rewards = reward(["p"] * 5, completions, ["t"] * 5, [["port"]] * 5)
    alone = TreeReturn(env, policy=GreedyPlanner())
    assert rewards == [alone.score(c, "t", ["port"]) for c in completions]
    assert (reward.episodes, reward.played) == (4, 2)  # the illegal one is no episode
    reward(["p"], [" num_warps 8"], ["t"], [["port"]])  # a later call (another model): played again
    assert reward.played == 3


def test_grpo_steps_on_the_tree_run_on_the_cpu_and_move_the_policy(env, tmp_path):
    states = tree_states(env, [RandomPlanner(seed=s, stop_prob=0.0) for s in range(4)])
    legal = legal_by_prompt(env, states)
    model, tokenizer = build_tiny([s["prompt"] for s in states] + [t for ts in legal.values() for t in ts])
    before = [p.detach().clone() for p in model.parameters()]
    reward = TreeReturn(env, model, tokenizer)
    args = GRPOConfig(output_dir=str(tmp_path / "grpo"), max_steps=2, per_device_train_batch_size=8,
                      num_generations=4, max_completion_length=8, learning_rate=1e-3, logging_steps=1,
                      save_strategy="no", report_to="none", bf16=False, gradient_checkpointing=False, seed=0,
                      beta=0.0, remove_unused_columns=False)
    log = train_tree_grpo(model, tokenizer, states, reward, args)
    steps = [entry for entry in log if "reward" in entry]
    assert len(steps) == 2 and reward.episodes > 0
    assert any(entry["reward_std"] > 0 for entry in steps)  # the group's returns differ: a signal
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    assert Strategy.parse(legal[states[0]["prompt"]][0]).kind == "port"


def test_mtmc_train_env_tree_trains_on_the_train_split_and_reports_on_the_eval_split(tmp_path):
    from mtmc.jobs.train_tree import train_on_tree
    from mtmc.tasks import load_suite
    from tests.test_conf import composed

    suite = tmp_path / "suite"
    suite.mkdir()
    for task in (tiny_task("t", split="train"), tiny_task("e", scale=3, split="eval")):
        (suite / f"{task.name}.py").write_text(task.source)
    sha = {t.name: task_fingerprint(t) for t in load_suite(suite)}
    rows = [{**r, "task_sha": sha[r["task"]]} if r["kind"] == "node" else r
            for name in ("t", "e") for r in branching_rows(name)]
    path = write_rows(tmp_path / "tree.jsonl", rows)
    out = tmp_path / "out"
    cfg = composed("train", ["stage=grpo", "env=tree", f"tree={path}", f"suite={suite}", f"out={out}",
                             "grpo.max_steps=1", "grpo.per_device_train_batch_size=4",
                             "grpo.num_generations=4", "tree_env.eval_seeds=2",
                             "tree_env.behaviour_episodes=2"])
    result = train_on_tree(cfg, out)  # what `mtmc train env=tree` calls with the run folder
    assert result["train_tasks"] == 1 and result["episodes"] > 0
    assert (out / "checkpoint" / "config.json").is_file() and (out / "train_curves.png").is_file()
    summary = json.loads((out / "grpo_summary.json").read_text())
    assert summary["episodes"] == result["episodes"] and summary["states_per_step"] == 1
    assert summary["steps"] == 1 and summary["episodes_per_min"] > 0 and summary["job_s"] >= summary["grpo_s"]
    report = json.loads((out / "eval" / "tree_report.json").read_text())
    assert [r["task"] for r in report["tasks"]] == ["e"]  # the eval split only
    assert report["meta"]["runs"] == {"lm": 1, "random": 2, "heuristic": 1}


def test_env_tree_mistakes_are_one_line_errors(tmp_path):
    from omegaconf import OmegaConf

    from mtmc.jobs.train_tree import train_on_tree

    with pytest.raises(SystemExit, match="env=tree trains stage=grpo only, not both"):
        train_on_tree(OmegaConf.create({"stage": "both"}), tmp_path)
    with pytest.raises(SystemExit, match="env=tree needs tree=<a file mtmc tree record wrote>"):
        train_on_tree(OmegaConf.create({"stage": "grpo", "tree": None}), tmp_path)
    cfg = OmegaConf.create({"stage": "grpo", "tree": str(write_rows(tmp_path / "t.jsonl", branching_rows())),
                            "suite": "builtin"})
    with pytest.raises(SystemExit, match="holds no train-split task of suite=builtin"):
        train_on_tree(cfg, tmp_path)  # its task "t" is no built-in
