"""GRPO's legal rollout: the policy samples among the legal steps of its state, the way LMPlanner acts,
so an untrained model already gets a learning signal. `grpo_rollout=free` is tests/train/test_grpo.py's
end-to-end test.

The tiny model is untrained on purpose: writing freely, it would almost never produce a legal step.

    pytest tests/train/test_rollout.py
"""

from __future__ import annotations

import json
import logging
from types import SimpleNamespace

import pytest
import torch
from trl import GRPOConfig

from coders.template import TemplateCoder
from mtmc.lm_policy import state_prompt, tokenize_completions
from mtmc.program import Program
from mtmc.protocols import PlanState
from mtmc.reward import RewardConfig
from mtmc.strategies import Strategy
from mtmc.tasks import Task, load_task
from mtmc.train.data import load_runs, plan_states
from mtmc.train.grpo import LegalRollout, StepReward, legal_steps, replay, train_grpo
from mtmc.train.tiny import build_tiny
from mtmc.verify.verdict import Status, Verdict
from planners.lm import LMPlanner
from tests.graph.fakes import TaggedVerifier, tiny_task
from tests.scripted_coder import ScriptedCoder
from tests.train.runs import write_run

GROUP = 8  # num_generations: TRL hands the rollout each prompt this many times


@pytest.fixture
def recorded(tmp_path):
    """The three states of a recorded scale_bias_rows run (before the port, after it, after vectorize),
    their legal steps under the template coder, and an untrained tiny model that reads them all."""
    task = load_task("scale_bias_rows")
    write_run(tmp_path / "runs" / task.name, task.name, [("port", ["ok"]), ("vectorize", ["ok"])])
    runs = load_runs([tmp_path / "runs"])
    states = plan_states(runs)
    coder = TemplateCoder()
    legal = legal_steps(states, coder, {task.name: task})
    model, tokenizer = build_tiny([s["prompt"] for s in states] + [t for ts in legal.values() for t in ts])
    return SimpleNamespace(task=task, run=runs[0], states=states, coder=coder, legal=legal, model=model,
                           tokenizer=tokenizer)


def trainer(model, tokenizer, temperature=1.0, step=0):
    """What LegalRollout reads from a GRPOTrainer."""
    return SimpleNamespace(model=model, processing_class=tokenizer, state=SimpleNamespace(global_step=step),
                           args=SimpleNamespace(temperature=temperature))


def repeated(states):
    return [s["prompt"] for s in states for _ in range(GROUP)]


# ---------------------------------------------------------------------------------------------------
# the rollout


def test_every_sampled_completion_is_a_legal_step_of_its_state(recorded):
    r = recorded
    prompts = repeated(r.states)
    out = LegalRollout(r.legal)(prompts, trainer(r.model, r.tokenizer))
    assert set(out) == {"prompt_ids", "completion_ids", "logprobs"}
    assert all(len(out[key]) == len(prompts) for key in out)  # one completion per received prompt

    states = [s for s in r.states for _ in range(GROUP)]
    picks = []
    rows = zip(states, out["prompt_ids"], out["completion_ids"], strict=True)
    for state, prompt_ids, completion_ids in rows:
        text = r.tokenizer.decode(completion_ids, skip_special_tokens=True)  # what TRL hands the reward
        strategy = Strategy.parse(text)
        program = replay(r.coder, r.task, tuple(state["accepted"]), {})
        assert strategy in r.coder.legal_strategies(r.task, program)
        # tokenized as SFT and LMPlanner see it: prompt + " <strategy>" + eos
        (row,), _ = tokenize_completions(r.tokenizer, state["prompt"], [" " + str(strategy)])
        assert prompt_ids + completion_ids == row and completion_ids[-1] == r.tokenizer.eos_token_id
        picks.append((state["step"], str(strategy)))
    assert {step for step, _ in picks} == {0, 1, 2}
    assert len({text for step, text in picks if step == 1}) > 1  # a sample, not the argmax every time


def test_logprobs_are_the_models_own_per_token_logprobs(recorded):
    r = recorded
    out = LegalRollout(r.legal)(repeated(r.states), trainer(r.model, r.tokenizer, temperature=20.0))
    assert {len(ids) for ids in out["completion_ids"]} >= {2, 3}  # "stop" + eos, "tile BLOCK=256" + eos
    for prompt_ids, completion_ids, logprobs in zip(out["prompt_ids"], out["completion_ids"], out["logprobs"],
                                                    strict=True):
        ids = prompt_ids + completion_ids
        with torch.no_grad():  # one sequence alone, no padding: the plainest forward there is
            table = r.model(input_ids=torch.tensor([ids])).logits[0].float().log_softmax(-1)
        direct = [table[len(prompt_ids) + j - 1, token].item() for j, token in enumerate(completion_ids)]
        assert logprobs == pytest.approx(direct, abs=1e-5)


def test_draws_are_seeded_by_the_training_step(recorded):
    r = recorded
    rollout, prompts = LegalRollout(r.legal, seed=1), repeated(r.states)
    first = rollout(prompts, trainer(r.model, r.tokenizer, step=3))["completion_ids"]
    assert rollout(prompts, trainer(r.model, r.tokenizer, step=3))["completion_ids"] == first
    assert rollout(prompts, trainer(r.model, r.tokenizer, step=4))["completion_ids"] != first


def test_a_prompt_that_is_no_state_is_a_clear_error(recorded):
    r = recorded
    with pytest.raises(ValueError, match="not one of the GRPO states"):
        LegalRollout(r.legal)(["history none\nnext:"], trainer(r.model, r.tokenizer))


class MenuCoder:
    """Legal steps by task name; nothing is ever applied (the states below are all before any step)."""

    def __init__(self, menus):
        self.menus = menus

    def legal_strategies(self, task, program):
        return [Strategy.parse(s) for s in self.menus[task.name]]


def test_states_sharing_a_prompt_are_offered_the_steps_legal_in_all_of_them(caplog):
    tasks = {name: Task(name, "") for name in ("a", "b", "c")}
    coder = MenuCoder({"a": ["vectorize", "autotune", "stop"], "b": ["autotune", "stop", "vectorize"],
                       "c": ["num_warps 8"]})
    state = {"accepted": []}
    shared = [state | {"prompt": "same", "task": "a"}, state | {"prompt": "same", "task": "b"},
              state | {"prompt": "c alone", "task": "c"}]
    assert legal_steps(shared, coder, tasks) == {"same": ["vectorize", "autotune", "stop"],
                                                 "c alone": ["num_warps 8"]}
    disjoint = [state | {"prompt": "same", "task": "a"}, state | {"prompt": "same", "task": "c"}]
    with caplog.at_level(logging.WARNING):  # no step legal in both: the union, and a warning
        offered = legal_steps(disjoint, coder, tasks)
    assert offered == {"same": ["vectorize", "autotune", "stop", "num_warps 8"]}
    assert "share a prompt but no legal step" in caplog.text


# ---------------------------------------------------------------------------------------------------
# GRPO with it


class PaysOne(StepReward):
    """Reward 1 for one strategy, 0 for any other; it records what it was asked to judge."""

    def __init__(self, coder, tasks, paid: str) -> None:
        super().__init__(coder, verifier=None, tasks=tasks, reward=RewardConfig())
        self.paid = paid
        self.seen: list[str] = []

    def score(self, completion, *state) -> float:
        self.seen.append(completion)
        return float(completion.strip() == self.paid)


def grpo_args(out, **overrides) -> GRPOConfig:
    args = dict(output_dir=str(out), max_steps=10, per_device_train_batch_size=GROUP, num_generations=GROUP,
                learning_rate=1e-2, temperature=1.0, logging_steps=1, save_strategy="no", report_to="none",
                bf16=False, gradient_checkpointing=False, seed=0)
    return GRPOConfig(**(args | overrides))


def save(model, tokenizer, folder) -> str:
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


@pytest.mark.parametrize("seed", [0, 1, 2])  # three random initialisations: three different untrained picks
def test_grpo_on_a_reward_for_x_makes_the_planner_propose_x(recorded, tmp_path, seed):
    r = recorded
    states = [s for s in r.states if s["step"] == 1]  # ported: ten legal steps
    menu = r.legal[states[0]["prompt"]]
    plan_state = PlanState(task=r.task, summary=r.run.summary, program=Program(""), verdict=None,
                           legal=[Strategy.parse(s) for s in menu], history=r.run.history(1),
                           steps_left=r.run.max_steps - 1)
    assert state_prompt(plan_state) == states[0]["prompt"]
    model, tokenizer = build_tiny([states[0]["prompt"], *menu], seed=seed)
    planner = LMPlanner(save(model, tokenizer, tmp_path / "before"))
    before = str(planner.propose(plan_state))
    # x: the likeliest step after the untrained pick (and stop). A rarer one would seldom be drawn at
    # temperature 1: each extra token of an untrained model costs ~log(vocabulary) of score.
    scores = dict(zip(menu, planner.score(states[0]["prompt"], [" " + s for s in menu]), strict=True))
    x = max((s for s in menu if s not in (before, "stop")), key=scores.__getitem__)

    reward = PaysOne(r.coder, {r.task.name: r.task}, paid=x)
    log = train_grpo(model, tokenizer, states, reward, grpo_args(tmp_path / "grpo", seed=seed))
    assert len(reward.seen) == 10 * GROUP and {c.strip() for c in reward.seen} <= set(menu)
    rewards = [entry["reward"] for entry in log if "reward" in entry]
    assert rewards[-1] > rewards[0]
    after = str(LMPlanner(save(model, tokenizer, tmp_path / "after")).propose(plan_state))
    assert after == x != before


def test_grpo_with_the_legal_rollout_and_the_step_reward_never_leaves_the_menu(tmp_path):
    """The real reward (scripted coder, tagged verifier): an untrained model's samples are all legal,
    their rewards differ, and the policy moves."""
    coder = ScriptedCoder({"vectorize": ["incorrect"], "autotune": ["raise:no autotune here"],
                           "num_warps 8": ["ok@0.5"]})
    judged: list[float] = []

    class Recorded(StepReward):
        def score(self, *args) -> float:
            judged.append(super().score(*args))
            return judged[-1]

    reward = Recorded(coder, TaggedVerifier(eager_ms=1.0), {"tiny_relu": tiny_task()}, RewardConfig())
    port = json.dumps(Verdict(Status.OK, candidate_ms=1.0, eager_ms=1.0).to_dict())
    states = [{"prompt": "relu ported next:", "task": "tiny_relu", "step": 1, "accepted": ["port"],
               "previous": port},
              {"prompt": "relu vectorized next:", "task": "tiny_relu", "step": 2,
               "accepted": ["port", "fuse epilogue"], "previous": port}]
    model, tokenizer = build_tiny([s["prompt"] for s in states] + list(coder_menu(coder)), seed=0)
    before = [p.detach().clone() for p in model.parameters()]
    log = train_grpo(model, tokenizer, states, reward, grpo_args(tmp_path, max_steps=2, learning_rate=1e-3,
                                                                 per_device_train_batch_size=4,
                                                                 num_generations=4))
    assert len(judged) == 2 * 4 and RewardConfig().rejected not in judged
    assert reward.verifier_calls >= 1
    assert any(entry["reward_std"] > 0 for entry in log if "reward_std" in entry)
    assert any(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def coder_menu(coder: ScriptedCoder) -> list[str]:
    return [str(s) for s in coder.legal] + ["stop"]


def test_an_unknown_rollout_is_refused(recorded, tmp_path):
    r = recorded
    with pytest.raises(ValueError, match="rollout='beam': use one of legal, free"):
        train_grpo(r.model, r.tokenizer, r.states, PaysOne(r.coder, {}, "stop"), grpo_args(tmp_path),
                   rollout="beam")
