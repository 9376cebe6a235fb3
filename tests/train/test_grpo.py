"""GRPO: the step reward (parse, legality, coder, verifier, cache) and one short GRPO run end to end on
the CPU with the template coder and the interpreter verifier.

    pytest tests/train/test_grpo.py
"""

from __future__ import annotations

import json

import pytest
import torch
from trl import GRPOConfig, SFTConfig

from coders.template import TemplateCoder
from mtmc.lm_policy import completion_text
from mtmc.reward import RewardConfig
from mtmc.tasks import load_task
from mtmc.train.data import load_runs, plan_states
from mtmc.train.grpo import StepReward, train_grpo
from mtmc.train.sft import train_sft
from mtmc.train.tiny import build_tiny
from mtmc.verify import InterpreterVerifier
from mtmc.verify.verdict import Status, Verdict
from tests.graph.fakes import TaggedVerifier, tiny_task
from tests.scripted_coder import ScriptedCoder
from tests.train.runs import write_run

TIMED_PORT = json.dumps(Verdict(Status.OK, candidate_ms=1.0, eager_ms=1.0).to_dict())


def scripted_reward() -> StepReward:
    coder = ScriptedCoder({"vectorize": ["incorrect"], "autotune": ["raise:no autotune here"],
                           "num_warps 8": ["ok@0.5"]})
    return StepReward(coder, TaggedVerifier(eager_ms=1.0), {"tiny_relu": tiny_task()}, RewardConfig())


def rewards(reward: StepReward, completions: list[str], *, step=1, accepted=("port",), previous=TIMED_PORT):
    n = len(completions)
    return reward(prompts=["p"] * n, completions=completions, task=["tiny_relu"] * n, step=[step] * n,
                  accepted=[list(accepted)] * n, previous=[previous] * n)


def test_reward_of_each_kind_of_completion():
    got = rewards(scripted_reward(), [" fuse epilogue", " vectorize", " autotune", " num_warps 8", " stop",
                                      " port", " tile BLOCK=999", " banana split", ""])
    assert got == pytest.approx([
        0.2,             # correct, untimed: no speedup term
        -0.5,            # incorrect
        -1.0,            # the coder raised: a compile error, as in the optimize graph
        0.2 + 0.6931,    # correct and 2x faster than the previous accepted program (1.0 -> 0.5 ms)
        0.0,             # stop keeps the program
        -2.0, -2.0,      # parses, but not legal here (port is done; no such tile)
        -2.0, -2.0,      # does not parse
    ], abs=1e-4)


def test_before_the_port_only_port_is_legal():
    assert rewards(scripted_reward(), [" port", " stop", " vectorize"], step=0, accepted=(), previous="") == [
        0.2, -2.0, -2.0]


def test_each_distinct_candidate_is_verified_once():
    reward = scripted_reward()
    rewards(reward, [" fuse epilogue"] * 4 + [" vectorize"] * 4 + [" stop", " nonsense"])
    assert reward.verifier_calls == reward.verifier.calls == 2


class BatchingVerifier(TaggedVerifier):
    """A verifier that judges many programs at once (as verifier=ray does), answering in reverse order."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.batches: list[int] = []

    def verify_many(self, pairs):
        self.batches.append(len(pairs))
        return reversed([(i, self.verify(task, program)) for i, (task, program) in enumerate(pairs)])


def test_a_batching_verifier_gets_the_new_candidates_at_once_with_the_same_rewards():
    completions = [" num_warps 8", " fuse epilogue", " vectorize", " autotune", " stop", " nonsense",
                   " fuse epilogue"] * 2
    one_by_one, batched = scripted_reward(), scripted_reward()
    batched.verifier = BatchingVerifier(eager_ms=1.0)
    assert rewards(batched, completions) == rewards(one_by_one, completions)
    assert batched.verifier.batches == [3] and batched.verifier_calls == one_by_one.verifier_calls == 3
    assert batched.coder.calls == one_by_one.coder.calls  # one apply per row that reaches the coder
    rewards(batched, completions)
    assert batched.verifier.batches == [3, 0]  # every candidate judged already


def test_reward_with_the_template_coder_and_the_interpreter():
    task = load_task("scale_bias_rows")
    with InterpreterVerifier(seeds=1) as verifier:
        reward = StepReward(TemplateCoder(), verifier, {task.name: task}, RewardConfig())
        got = reward(prompts=["p"] * 3, completions=[" tile BLOCK=2048", " split_k 4", " tile BLOCK=2048"],
                     task=[task.name] * 3, step=[2] * 3, accepted=[["port", "vectorize"]] * 3,
                     previous=[json.dumps(Verdict(Status.OK).to_dict())] * 3)
    assert got == pytest.approx([0.2, -2.0, 0.2])  # split_k is not a step of a row-wise kernel
    assert reward.verifier_calls == 1


def test_grpo_refuses_to_drop_the_state_columns(tmp_path):
    model, tokenizer = build_tiny(["a"])
    args = GRPOConfig(output_dir=str(tmp_path), remove_unused_columns=True, bf16=False, report_to="none")
    with pytest.raises(ValueError, match="remove_unused_columns must be false"):
        train_grpo(model, tokenizer, [{"prompt": "a"}], scripted_reward(), args)


# ---------------------------------------------------------------------------------------------------
# end to end


def test_free_grpo_steps_run_end_to_end_on_the_cpu_and_move_the_policy(tmp_path):
    """`rollout="free"`, TRL's own generation. States from a recorded run of a built-in train task; a
    short SFT warm start so the tiny model writes strategies at all (a random one writes noise, every
    reward -2, no signal); then two GRPO steps whose rewards come from the template coder and the
    interpreter verifier. (The default legal rollout: tests/train/test_rollout.py.)"""
    task = load_task("scale_bias_rows")
    write_run(tmp_path / "runs" / task.name, task.name, [("port", ["ok"]), ("vectorize", ["ok"])])
    states = plan_states(load_runs([tmp_path / "runs"]))
    assert [s["step"] for s in states] == [0, 1, 2]
    choices = [["port"], ["tile BLOCK=2048", "num_warps 8"], ["autotune", "stop"]]
    examples = [{"prompt": s["prompt"], "completion": completion_text(c)}
                for s, options in zip(states, choices, strict=True) for c in options] * 4
    model, tokenizer = build_tiny([e["prompt"] + e["completion"] for e in examples], seed=0)
    train_sft(model, tokenizer, examples, SFTConfig(
        output_dir=str(tmp_path / "sft"), max_steps=40, learning_rate=3e-3, per_device_train_batch_size=8,
        completion_only_loss=True, save_strategy="no", report_to="none", bf16=False,
        gradient_checkpointing=False))

    before = [p.detach().clone() for p in model.parameters()]
    args = GRPOConfig(output_dir=str(tmp_path / "grpo"), max_steps=2, per_device_train_batch_size=8,
                      num_generations=4, max_completion_length=8, learning_rate=1e-3, logging_steps=1,
                      save_strategy="no", report_to="none", bf16=False, gradient_checkpointing=False, seed=0)
    with InterpreterVerifier(seeds=1) as verifier:
        reward = StepReward(TemplateCoder(), verifier, {task.name: task}, RewardConfig())
        log = train_grpo(model, tokenizer, states, reward, args, rollout="free")
    steps = [entry for entry in log if "reward" in entry]
    assert len(steps) == 2
    assert reward.verifier_calls >= 1  # legal strategies were written, applied and judged
    assert any(entry["reward_std"] > 0 for entry in steps)  # a learning signal...
    # ...that moved the policy
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
