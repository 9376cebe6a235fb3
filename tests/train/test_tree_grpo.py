"""Multi-step GRPO on a tree: states from episodes, the return-to-go reward, and a few GRPO steps with
the tiny model that move it (no coder, no verifier); the ablation switches: single-step credit, mean
scoring in training, an SFT warm start."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest
import torch
from trl import GRPOConfig

from mtmc.lm_policy import completion_text, score_completions, state_prompt
from mtmc.strategies import Strategy
from mtmc.train.grpo import LegalRollout
from mtmc.train.tiny import build_tiny
from mtmc.train.tree_grpo import (
    GreedyPolicy,
    TreeReturn,
    heuristic_examples,
    legal_by_prompt,
    restore,
    train_tree_grpo,
    tree_states,
)
from mtmc.tree import TreeEnv, load_tree, task_fingerprint
from planners.greedy import GreedyPlanner
from planners.heuristic import HeuristicPlanner
from planners.random import RandomPlanner
from tests.tree.fakes import branching_rows, expanded, node, tiny_task, write_rows

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


def setup_rows(task: str = "t") -> list[dict]:
    """port P (2 ms) -> num_warps 8: S (2 ms, no faster) -> tile BLOCK=1024: W (0.2 ms, a leaf)
                     -> num_warps 2: Q (1.5 ms, a leaf)
    num_warps 8 wins nothing itself but sets up a 10x step; num_warps 2 wins 1.33x and ends there."""
    return [node(task, "P", None, "port", 0, 2.0),
            node(task, "S", "P", "num_warps 8", 1, 2.0, rank=0),
            node(task, "Q", "P", "num_warps 2", 1, 1.5, rank=1),
            expanded(task, "P", 2),
            node(task, "W", "S", "tile BLOCK=1024", 2, 0.2),
            expanded(task, "S", 1)]


def test_a_step_that_sets_up_a_later_win_is_credited_under_return_to_go_and_not_under_step(tmp_path):
    env = TreeEnv(load_tree(write_rows(tmp_path / "s.jsonl", setup_rows())), [tiny_task("t")], max_steps=4,
                  call_cost=COST)
    to_go = TreeReturn(env, policy=GreedyPlanner())  # the default credit
    step = TreeReturn(env, credit="step")  # no continuation: needs no model and no policy
    setup, quick = " num_warps 8", " num_warps 2"
    assert to_go.score(setup, "t", ["port"]) == pytest.approx(math.log(2.0 / 0.2) - 2 * COST)
    assert to_go.score(quick, "t", ["port"]) == pytest.approx(math.log(2.0 / 1.5) - COST)
    assert step.score(setup, "t", ["port"]) == pytest.approx(-COST)  # its own step: no gain, one call
    assert step.score(quick, "t", ["port"]) == pytest.approx(math.log(2.0 / 1.5) - COST)
    assert step.score(" stop", "t", ["port"]) == 0.0 and step.score(" vectorize", "t", ["port"]) == -2.0
    assert step.score(" tile BLOCK=1024", "t", ["port", "num_warps 8"]) == pytest.approx(math.log(10) - COST)
    assert (step.episodes, step.played) == (4, 4)  # each legal step (stop too) taken once; illegal text: none
    with pytest.raises(ValueError, match="credit must be one of"):
        TreeReturn(env, policy=GreedyPlanner(), credit="final")
    with pytest.raises(ValueError, match="needs the model"):
        TreeReturn(env)  # return_to_go plays a continuation


class FixedLogits:
    """A causal LM that gives every position the same next-token distribution: end of sequence likely,
    `stop` unlikely, every other token in between. Per token `stop` is worse than the others, but it is
    one token, so its sum of log-probabilities beats a two-token step's while its mean does not."""

    device = torch.device("cpu")

    def __init__(self, tokenizer) -> None:
        self.logits = torch.zeros(len(tokenizer))
        self.logits[tokenizer.eos_token_id] = 5.0
        self.logits[tokenizer.convert_tokens_to_ids("stop")] = -4.0

    def __call__(self, input_ids, attention_mask):
        return SimpleNamespace(logits=self.logits.expand(*input_ids.shape, -1).clone())


def test_mean_scoring_changes_the_choice_of_the_rollout_and_the_continuation_where_lengths_differ(env):
    state = restore(env, "t", ["port", "num_warps 8"])  # num_warps 2, tile BLOCK=1024, stop
    prompt, texts = state_prompt(state), [completion_text(s) for s in state.legal]
    _, tokenizer = build_tiny([prompt, *texts])
    model = FixedLogits(tokenizer)
    lengths = [len(o.completion_ids) for o in score_completions(model, tokenizer, prompt, texts)]
    assert lengths == [3, 3, 2]  # two words and eos; stop and eos
    assert str(GreedyPolicy(model, tokenizer).propose(state)) == "stop"  # sum, the default
    assert str(GreedyPolicy(model, tokenizer, scoring="mean").propose(state)) == "num_warps 2"
    trainer = SimpleNamespace(state=SimpleNamespace(global_step=0), args=SimpleNamespace(temperature=0.0),
                              model=model, processing_class=tokenizer)
    legal = {prompt: [str(s) for s in state.legal]}
    for scoring, expected in (("sum", " stop"), ("mean", " num_warps 2")):
        picked = LegalRollout(legal, scoring=scoring)([prompt] * 2, trainer)["completion_ids"]
        assert [tokenizer.decode(ids, skip_special_tokens=True) for ids in picked] == [expected.strip()] * 2
    with pytest.raises(ValueError, match="scoring must be one of"):
        LegalRollout(legal, scoring="max")


def test_heuristic_examples_are_each_state_of_its_episodes_and_the_step_it_chose(env):
    examples = heuristic_examples(env, HeuristicPlanner())
    assert examples[0] == {"prompt": state_prompt(restore(env, "t", [])), "completion": " port"}
    steps: list[str] = []
    for example in examples:  # each completion is legal in its prompt's state, reached by those before
        state = restore(env, "t", steps)
        assert example["prompt"] == state_prompt(state)
        assert Strategy.parse(example["completion"]) in state.legal
        steps.append(example["completion"].strip())


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


def suite_and_tree(tmp_path):
    """A suite of a train task `t` and an eval task `e`, and a tree of both (branching_rows)."""
    from mtmc.tasks import load_suite

    suite = tmp_path / "suite"
    suite.mkdir()
    for task in (tiny_task("t", split="train"), tiny_task("e", scale=3, split="eval")):
        (suite / f"{task.name}.py").write_text(task.source)
    sha = {t.name: task_fingerprint(t) for t in load_suite(suite)}
    rows = [{**r, "task_sha": sha[r["task"]]} if r["kind"] == "node" else r
            for name in ("t", "e") for r in branching_rows(name)]
    return suite, write_rows(tmp_path / "tree.jsonl", rows)


def test_mtmc_train_env_tree_trains_on_the_train_split_and_reports_on_the_eval_split(tmp_path):
    from mtmc.jobs.train_tree import train_on_tree
    from tests.test_conf import composed

    suite, path = suite_and_tree(tmp_path)
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
    assert (summary["stage"], summary["credit"], summary["scoring"]) == ("grpo", "return_to_go", "sum")


def test_stage_both_env_tree_fits_the_heuristic_then_runs_grpo_from_that_model(tmp_path, monkeypatch):
    import mtmc.jobs.train
    import mtmc.train.tree_grpo
    from mtmc.jobs.train_tree import train_on_tree
    from tests.test_conf import composed

    weights = {}
    sft_stage, train_tree_grpo = mtmc.jobs.train.sft_stage, mtmc.train.tree_grpo.train_tree_grpo

    def snapshot(model):
        return [p.detach().clone() for p in model.parameters()]

    def sft_spy(cfg, model, tokenizer, examples, out_dir):
        weights["initial"] = snapshot(model)
        history = sft_stage(cfg, model, tokenizer, examples, out_dir)
        weights["after_sft"] = snapshot(model)
        return history

    def grpo_spy(model, tokenizer, states, reward, args, scoring="sum"):
        weights["grpo_start"], weights["scoring"] = snapshot(model), (scoring, reward.policy.scoring)
        return train_tree_grpo(model, tokenizer, states, reward, args, scoring=scoring)

    monkeypatch.setattr(mtmc.jobs.train, "sft_stage", sft_spy)
    monkeypatch.setattr(mtmc.train.tree_grpo, "train_tree_grpo", grpo_spy)
    suite, path = suite_and_tree(tmp_path)
    out = tmp_path / "out"
    sft = ["+sft.max_steps=2", "sft.per_device_train_batch_size=2", "sft.learning_rate=1e-2"]
    grpo = ["grpo.max_steps=1", "grpo.per_device_train_batch_size=4", "grpo.num_generations=4"]
    cfg = composed("train", ["stage=both", "env=tree", f"tree={path}", f"suite={suite}", f"out={out}", *sft,
                             *grpo, "tree_env.behaviour_episodes=2", "tree_env.credit=step",
                             "planner.scoring=mean", "eval.enabled=false"])
    result = train_on_tree(cfg, out)
    assert result["sft_examples"] == len(heuristic_examples(
        TreeEnv(load_tree(path), [tiny_task("t")], max_steps=4), HeuristicPlanner())) > 0
    assert any(not torch.equal(a, b) for a, b in zip(weights["initial"], weights["after_sft"], strict=True))
    assert all(torch.equal(a, b) for a, b in zip(weights["after_sft"], weights["grpo_start"], strict=True))
    assert weights["scoring"] == ("mean", "mean")  # the rollout's and the continuation's: planner.scoring
    summary = json.loads((out / "grpo_summary.json").read_text())
    assert (summary["stage"], summary["credit"], summary["scoring"]) == ("both", "step", "mean")
    assert summary["episodes"] > 0


def test_env_tree_mistakes_are_one_line_errors(tmp_path):
    from omegaconf import OmegaConf

    from mtmc.jobs.train_tree import train_on_tree

    with pytest.raises(SystemExit, match="env=tree trains stage=grpo or both .*, not sft"):
        train_on_tree(OmegaConf.create({"stage": "sft"}), tmp_path)
    with pytest.raises(SystemExit, match="tree_env.credit=final: use one of return_to_go, step"):
        train_on_tree(OmegaConf.create({"stage": "grpo", "tree_env": {"credit": "final"}}), tmp_path)
    with pytest.raises(SystemExit, match="env=tree needs tree=<a file mtmc tree record wrote>"):
        train_on_tree(OmegaConf.create({"stage": "grpo", "tree": None}), tmp_path)
    cfg = OmegaConf.create({"stage": "grpo", "tree": str(write_rows(tmp_path / "t.jsonl", branching_rows())),
                            "suite": "builtin"})
    with pytest.raises(SystemExit, match="holds no train-split task of suite=builtin"):
        train_on_tree(cfg, tmp_path)  # its task "t" is no built-in
