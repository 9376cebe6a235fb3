"""Multi-step GRPO on a recorded tree (issue 26): TRL's GRPOTrainer over TreeEnv, with no coder and no
verifier in the loop, so it runs on a CPU in minutes.

    env = TreeEnv(load_tree(path), train_tasks, max_steps=4, call_cost=0.01)
    states = tree_states(env, [RandomPlanner(seed=s) for s in range(8)])
    reward = TreeReturn(env, model, tokenizer)
    log_history = train_tree_grpo(model, tokenizer, states, reward, GRPOConfig(...))

States: every state the behaviour planners' episodes pass through on the given tasks (train-split
ones: the caller's choice), de-duplicated by the steps that led there, as the LM planner's prompt.

Reward of a sampled step (the issue leaves the choice open; this is its first option): the step's
return-to-go under the current policy. TreeEnv is set back to the state (its steps replayed), the
sampled step is taken, and the model being trained finishes the episode greedily (the argmax of its
scores over the legal steps, as LMPlanner acts at temperature 0). The reward is the sum of the
environment's rewards from the sampled step on: log(time of the program before it / final time)
minus `call_cost` per verifier call from it on. So a step is credited with what it sets up for later
steps, which single-step GRPO (mtmc/train/grpo.py) cannot see; `stop` earns 0 (nothing changes,
nothing is spent), and text that is not a legal step earns `rejected`.

The policy samples through GRPO's `LegalRollout` (among the legal steps, at GRPOConfig.temperature).

Ablation switches (issue 26 Show 8), each off by default (today's behaviour):

- `credit="step"` (TreeReturn): single-step credit on the tree. A sampled step earns the
  environment's reward of that step alone, log(time before / time after) minus `call_cost` per call
  (`stop` 0, illegal text `rejected`), and no continuation is played: what a step sets up for later
  steps earns it nothing, as in single-step GRPO. Default `return_to_go` (above).
- `scoring="mean"` (TreeReturn's greedy continuation and train_tree_grpo's rollout): the legal steps
  are ranked and sampled by their mean log-probability per token instead of the sum, as LMPlanner
  does with `scoring="mean"` (mtmc/lm_policy.py SCORINGS); the job passes the eval planner's
  `planner.scoring`, so training acts the way the trained planner will be judged.
- an SFT warm start: `heuristic_examples` are the (prompt, step) pairs of the heuristic planner's
  episodes, for mtmc/train/sft.py before GRPO (`mtmc train stage=both env=tree`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer

from mtmc.lm_policy import checked_scoring, completion_text, score_completions, state_prompt
from mtmc.protocols import Planner, PlanState
from mtmc.strategies import Strategy, StrategyError
from mtmc.train.grpo import LegalRollout, shared_steps
from mtmc.tree.env import TreeEnv

# what a sampled step is credited with: the return from it on (the continuation played), or its own reward
CREDITS = ("return_to_go", "step")


def restore(env: TreeEnv, task: str, steps: Sequence[str]) -> PlanState:
    """Set the environment to the state `steps` lead to from the start (exact: every step's outcome
    is recorded)."""
    env.reset(task)
    for text in steps:
        env.step(Strategy.parse(text))
    return env.plan_state()


def tree_states(env: TreeEnv, planners: Sequence[Planner], tasks: Sequence[str] | None = None) -> list[dict]:
    """The distinct non-final states of each planner's episode on each task: prompt, task, steps."""
    states: dict[tuple[str, tuple[str, ...]], dict] = {}
    for task in tasks or sorted(env.tasks):
        for planner in planners:
            env.reset(task)
            while not env.done:
                state = env.plan_state()
                steps = tuple(record.strategy for record in state.history)
                states.setdefault((task, steps), {"prompt": state_prompt(state), "task": task,
                                                  "steps": list(steps)})
                env.step(planner.propose(state))
    return list(states.values())


def heuristic_examples(env: TreeEnv, planner: Planner, tasks: Sequence[str] | None = None) -> list[dict]:
    """SFT examples from one episode of `planner` (the heuristic) on each task: every state's prompt
    and, as its completion, the step the planner chose there (`stop` included), spelled as the
    planner's model is trained and scored (`completion_text`)."""
    examples = []
    for task in tasks or sorted(env.tasks):
        env.reset(task)
        while not env.done:
            state = env.plan_state()
            strategy = planner.propose(state)
            examples.append({"prompt": state_prompt(state), "completion": completion_text(strategy)})
            env.step(strategy)
    return examples


class GreedyPolicy:
    """The model as a planner: the legal step it scores highest (LMPlanner at temperature 0, with the
    same `scoring`: sum or mean of the step's token log-probabilities)."""

    def __init__(self, model: Any, tokenizer: Any, scoring: str = "sum") -> None:
        self.model, self.tokenizer, self.scoring = model, tokenizer, checked_scoring(scoring)

    @torch.no_grad()
    def propose(self, state: PlanState) -> Strategy:
        options = score_completions(self.model, self.tokenizer, state_prompt(state),
                                    [completion_text(s) for s in state.legal])
        scores = [option.scored(self.scoring) for option in options]
        return state.legal[max(range(len(scores)), key=lambda i: scores[i])]


class TreeReturn:
    """TRL reward function `(prompts, completions, task, steps) -> rewards`: each completion's
    return-to-go in `env`, the episode finished by `policy` (default: the model, greedily, ranking by
    `scoring`); with `credit="step"`, the step's own reward, no episode finished (no model needed).

    Within one call the model does not change (TRL calls the reward between optimiser steps) and the
    continuation's choices depend on the state alone (greedy; a seeded planner here draws per (seed,
    step)), so a step sampled several times from the same state (common in a group of
    `num_generations`) is played once and its return shared: `episodes` counts every rewarded episode,
    as GRPO learns from them, `played` the continuations actually simulated (under `credit="step"`,
    the steps taken)."""

    def __init__(self, env: TreeEnv, model: Any = None, tokenizer: Any = None, *, rejected: float = -2.0,
                 policy: Planner | None = None, credit: str = "return_to_go", scoring: str = "sum") -> None:
        if credit not in CREDITS:
            raise ValueError(f"credit must be one of {CREDITS}, got {credit!r}")
        if policy is None and model is None and credit == "return_to_go":
            raise ValueError("TreeReturn needs the model being trained (or a fixed continuation policy)")
        self.env, self.rejected, self.credit = env, rejected, credit
        self.policy = policy or (GreedyPolicy(model, tokenizer, scoring) if model is not None else None)
        self.episodes = 0  # legal completions rewarded (each one an episode GRPO learns from)
        self.played = 0  # of those, the continuations simulated (the others were a repeat in the call)

    def __call__(self, prompts: list[str], completions: list[str], task: list[str], steps: list[list[str]],
                 **kwargs: Any) -> list[float]:
        returns: dict[tuple[str, tuple[str, ...], str], float | None] = {}
        return [self.score(c, t, s, returns) for c, t, s in zip(completions, task, steps, strict=True)]

    def score(self, completion: str, task: str, steps: Sequence[str],
              returns: dict[tuple[str, tuple[str, ...], str], float | None] | None = None) -> float:
        """The completion's reward; `returns` holds those already played under the same model."""
        returns = {} if returns is None else returns
        key = (task, tuple(steps), completion)
        if key not in returns:
            returns[key] = self.play(completion, task, steps)
        if returns[key] is None:
            return self.rejected
        self.episodes += 1
        return returns[key]

    def play(self, completion: str, task: str, steps: Sequence[str]) -> float | None:
        """The return-to-go of the completion's step in the state `steps` lead to, the episode finished
        by the policy (`credit="step"`: the step's own reward); None when the completion is not a legal
        step there."""
        state = restore(self.env, task, steps)
        try:
            strategy = Strategy.parse(completion)
        except StrategyError:
            return None
        if strategy not in state.legal:
            return None
        before = self.env.return_
        result = self.env.step(strategy)
        if self.credit == "step":
            self.played += 1
            return result.reward
        while not self.env.done:
            self.env.step(self.policy.propose(self.env.plan_state()))
        self.played += 1
        return self.env.return_ - before


def legal_by_prompt(env: TreeEnv, states: Sequence[dict]) -> dict[str, list[str]]:
    """prompt -> the legal steps of its state (states sharing a prompt: see grpo.shared_steps)."""
    offered: dict[str, list[list[str]]] = {}
    for state in states:
        legal = restore(env, state["task"], state["steps"]).legal
        offered.setdefault(state["prompt"], []).append([str(s) for s in legal])
    return {prompt: shared_steps(prompt, lists) for prompt, lists in offered.items()}


def train_tree_grpo(model: Any, tokenizer: Any, states: Sequence[dict], reward: TreeReturn,
                    args: GRPOConfig, scoring: str = "sum") -> list[dict]:
    """GRPO on `states` with the legal rollout (sampling by `scoring`, sum or mean) and the tree reward;
    the trainer's log history."""
    if not states:
        raise ValueError("train_tree_grpo: no states")
    if args.remove_unused_columns:
        raise ValueError("train_tree_grpo: remove_unused_columns must be false (the reward reads the "
                         "task and steps columns)")
    rollout = LegalRollout(legal_by_prompt(reward.env, states), seed=args.seed, scoring=scoring)
    trainer = GRPOTrainer(model=model, reward_funcs=reward, args=args,
                          train_dataset=Dataset.from_list(list(states)), processing_class=tokenizer,
                          rollout_func=rollout)
    trainer.train()
    return trainer.state.log_history
