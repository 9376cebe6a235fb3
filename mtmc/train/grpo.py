"""GRPO on the planner's choices: TRL's GRPOTrainer, with the coder and the verifier as the reward.

    reward = StepReward(coder, verifier, tasks={t.name: t for t in train_tasks}, reward=RewardConfig())
    log_history = train_grpo(model, tokenizer, plan_states(runs), reward, GRPOConfig(output_dir=...))

A first slice, single-step on purpose: each prompt is one state taken from a recorded trajectory
(mtmc/train/data.py `plan_states`), the policy picks one strategy, and its reward is that one step's
`step_reward` (mtmc/reward.py) once the coder has applied it and the verifier has judged it. Nothing
is rolled out past that step, so what a step sets up for later steps (and what stopping forfeits) is
not seen; multi-step episodes through the optimize graph are the next slice.

How the policy picks (`rollout=`):

- `legal` (default): as LMPlanner acts at inference. `LegalRollout`, TRL's `rollout_func`, scores
  every legal strategy of the state as a completion of its prompt (mtmc/lm_policy.py
  `score_completions`) and samples one from softmax(scores / temperature). An untrained model
  thus still tries real steps and the group's rewards differ: a learning signal from the first
  step. The loss is TRL's, on the sampled tokens' log-probabilities under the whole vocabulary: it
  raises a well-rewarded step's score, which is what the planner ranks by. The rollout's
  distribution is that one renormalized over the legal set, so TRL's sampling log-probabilities
  are not exactly the behaviour policy's; nothing here reads them (no vLLM, no off-policy mask).
- `free`: TRL's own generation; the policy writes its strategy freely, and text that does not parse
  or is not legal earns `RewardConfig.rejected`. An untrained model almost never writes a legal
  step, so every reward is the same and there is nothing to learn from until SFT has taught it.

Either way a strategy that is not legal in its state earns `RewardConfig.rejected`, the worst
outcome there is (a planner that leaves the menu gets nothing done), and `stop` earns 0: it keeps
the current program.
"""

from __future__ import annotations

import json
import logging
import random
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer

from mtmc.lm_policy import checked_scoring, completion_text, sample_index, score_completions
from mtmc.program import Program
from mtmc.protocols import Coder, CoderError, Verifier
from mtmc.reward import RewardConfig, step_reward
from mtmc.strategies import Strategy, StrategyError
from mtmc.tasks import Task
from mtmc.verify.verdict import Status, Verdict

log = logging.getLogger(__name__)

ROLLOUTS = ("legal", "free")


class StepReward:
    """TRL reward function: `(prompts, completions, task, step, accepted, previous) -> rewards`.

    The extra arguments are the dataset's columns (see `plan_states`). Programs and verdicts are
    cached in memory by (task, accepted steps) and (task, program digest): a GRPO group samples the
    same strategy many times, and each distinct candidate reaches the verifier once. (The verifier's
    own SQLite cache, `verifier.cache_path`, keeps them across runs.) A verifier with `verify_many`
    (every pooled one: verifier=ray, local, interpreter) gets a batch's new candidates all at once
    (`prepare`), judged one per worker at once.
    """

    def __init__(self, coder: Coder, verifier: Verifier, tasks: Mapping[str, Task],
                 reward: RewardConfig) -> None:
        self.coder = coder
        self.verifier = verifier
        self.tasks = dict(tasks)
        self.reward = reward
        self.programs: dict[tuple[str, tuple[str, ...]], Program] = {}
        self.verdicts: dict[tuple[str, str], Verdict] = {}
        self.verifier_calls = 0
        self.prepared: dict[tuple[str, str | None, str], deque[Program | Verdict]] = {}  # by prepare()

    def __call__(self, prompts: list[str], completions: list[str], task: list[str], step: list[int],
                 accepted: list[list[str]], previous: list[str], **kwargs: Any) -> list[float]:
        rows = list(zip(completions, task, step, accepted, previous, strict=True))
        if callable(getattr(self.verifier, "verify_many", None)):
            self.prepare(rows)
        try:
            return [self.score(*row) for row in rows]
        finally:
            self.prepared.clear()

    def score(self, completion: str, task_name: str, step: int, accepted: Sequence[str],
              previous: str) -> float:
        task = self.tasks[task_name]
        program = self.replay(task, tuple(accepted))
        strategy = self.legal(completion, task, program)
        if strategy is None:
            return self.reward.rejected
        if strategy.is_stop:
            return 0.0
        verdict = self.judge(task, program, strategy)
        before = Verdict.from_dict(json.loads(previous)) if previous else None
        return step_reward(verdict, before, self.reward, step=step)

    def legal(self, completion: str, task: Task, program: Program | None) -> Strategy | None:
        """The completion's strategy when it parses and is a legal step of `program`, else None."""
        try:
            strategy = Strategy.parse(completion)
        except StrategyError:
            return None
        return strategy if strategy in self.coder.legal_strategies(task, program) else None

    def replay(self, task: Task, accepted: tuple[str, ...]) -> Program | None:
        return replay(self.coder, task, accepted, self.programs)

    def judge(self, task: Task, program: Program | None, strategy: Strategy) -> Verdict:
        ready = self.prepared.get(_step_key(task, program, strategy))
        candidate = ready.popleft() if ready else self.apply(task, program, strategy)
        if isinstance(candidate, Verdict):
            return candidate
        key = (task.name, candidate.digest)
        if key not in self.verdicts:
            self.verifier_calls += 1
            self.verdicts[key] = self.verifier.verify(task, candidate)
        return self.verdicts[key]

    def apply(self, task: Task, program: Program | None, strategy: Strategy) -> Program | Verdict:
        try:
            return self.coder.apply(task, program, strategy)
        except CoderError as err:  # what the optimize graph's code node makes of it
            return Verdict(Status.COMPILE_ERROR, message=f"coder error: {err}")

    def prepare(self, rows: Sequence[tuple]) -> None:
        """For a verifier that judges many programs at once (one per worker or actor): apply every
        row's step first, in row order, and judge the new candidates together; `judge` then takes each
        row's own candidate (an LLM coder's too: one apply per row, as without this) and its verdict."""
        new: dict[tuple[str, str], tuple[Task, Program]] = {}
        for completion, task_name, _, accepted, _ in rows:
            task = self.tasks[task_name]
            program = self.replay(task, tuple(accepted))
            strategy = self.legal(completion, task, program)
            if strategy is None or strategy.is_stop:
                continue
            candidate = self.apply(task, program, strategy)
            self.prepared.setdefault(_step_key(task, program, strategy), deque()).append(candidate)
            if isinstance(candidate, Program) and (task.name, candidate.digest) not in self.verdicts:
                new[(task.name, candidate.digest)] = (task, candidate)
        pairs = list(new.values())
        for index, verdict in self.verifier.verify_many(pairs):
            task, candidate = pairs[index]
            self.verifier_calls += 1
            self.verdicts[(task.name, candidate.digest)] = verdict


def _step_key(task: Task, program: Program | None, strategy: Strategy) -> tuple[str, str | None, str]:
    return task.name, program.digest if program is not None else None, str(strategy)


# ---------------------------------------------------------------------------------------------------
# sampling among the legal steps


def replay(coder: Coder, task: Task, accepted: tuple[str, ...],
           programs: dict[tuple[str, tuple[str, ...]], Program]) -> Program | None:
    """The program the recorded accepted steps made, rebuilt by the coder (None before the port);
    `programs` caches it by (task, accepted steps).

    Exact for a deterministic coder such as the template coder: same program, same strategy, same
    result. An LLM coder would rebuild a different program; it would need the recorded sources.
    """
    if not accepted:
        return None
    key = (task.name, accepted)
    if key not in programs:
        before = replay(coder, task, accepted[:-1], programs)
        programs[key] = coder.apply(task, before, Strategy.parse(accepted[-1]))
    return programs[key]


def legal_steps(states: Sequence[dict[str, Any]], coder: Coder, tasks: Mapping[str, Task],
                programs: dict | None = None) -> dict[str, list[str]]:
    """prompt text -> the canonical texts of the legal strategies of its state, for every GRPO state.

    Each state is rebuilt the way StepReward rebuilds it (`replay`, the same coder), so the rollout
    offers exactly the steps the reward accepts as legal. The prompt leaves the task's name out, so
    two states (two tasks of the same regime, say) can render the same prompt; the policy cannot
    tell them apart, so it is offered the steps legal in all of them (in the first one's order), and
    if none is, the steps legal in any (the reward rejects the others).
    """
    programs = {} if programs is None else programs
    offered: dict[str, list[list[str]]] = {}
    for state in states:
        task = tasks[state["task"]]
        program = replay(coder, task, tuple(state["accepted"]), programs)
        legal = [str(s) for s in coder.legal_strategies(task, program)]
        offered.setdefault(state["prompt"], []).append(legal)
    return {prompt: shared_steps(prompt, lists) for prompt, lists in offered.items()}


def shared_steps(prompt: str, lists: list[list[str]]) -> list[str]:
    common = [s for s in lists[0] if all(s in other for other in lists[1:])]
    if common:
        return common
    union = list(dict.fromkeys(s for legal in lists for s in legal))
    log.warning("%d states share a prompt but no legal step; offering the %d steps legal in any of them:\n%s",
                len(lists), len(union), prompt)
    return union


class LegalRollout:
    """TRL `rollout_func(prompts, trainer) -> {"prompt_ids", "completion_ids", "logprobs"}`.

    TRL hands over the batch's prompts with their `num_generations` copies already made, and wants
    one completion per received prompt, in order. Each distinct prompt's legal steps are scored once
    with the trainer's current model; each copy then draws one step from softmax(scores /
    GRPOConfig.temperature), with an RNG seeded by (seed, global step), so a run is reproducible.
    The ids are those `tokenize_completions` makes (the completion ends with eos), the tokens SFT
    trains on and LMPlanner scores; `logprobs` are their per-token log-probabilities under the model
    at temperature 1 (TRL divides the logits by GRPOConfig.temperature for its loss; it reads these
    only for vLLM's importance sampling and the off-policy mask, both off here). The reward function
    then gets TRL's decoding of the ids, as in free generation.

    `scoring` is how a step's token log-probabilities become its score, as LMPlanner's option of that
    name: "sum" (the step's log-likelihood) or "mean" (per token; mtmc/lm_policy.py SCORINGS).
    """

    def __init__(self, legal: Mapping[str, Sequence[str]], seed: int = 0, scoring: str = "sum") -> None:
        self.legal = {prompt: list(steps) for prompt, steps in legal.items()}
        self.seed, self.scoring = seed, checked_scoring(scoring)

    def __call__(self, prompts: list[str], trainer: Any) -> dict[str, list]:
        rng = random.Random(f"{self.seed}:{trainer.state.global_step}")
        temperature = trainer.args.temperature
        prompt_ids, completion_ids, logprobs = [], [], []
        with torch.no_grad():  # GRPO recomputes the log-probabilities it differentiates
            scored = {p: score_completions(trainer.model, trainer.processing_class, p, self.options(p))
                      for p in dict.fromkeys(prompts)}
        for prompt in prompts:
            options = scored[prompt]
            pick = options[sample_index(rng, [o.scored(self.scoring) for o in options], temperature)]
            prompt_ids.append(pick.prompt_ids)
            completion_ids.append(pick.completion_ids)
            logprobs.append(pick.logprobs.tolist())
        return {"prompt_ids": prompt_ids, "completion_ids": completion_ids, "logprobs": logprobs}

    def options(self, prompt: str) -> list[str]:
        if prompt not in self.legal:
            raise ValueError(f"LegalRollout: a prompt that is not one of the GRPO states:\n{prompt}")
        return [completion_text(s) for s in self.legal[prompt]]


# ---------------------------------------------------------------------------------------------------
# training


def train_grpo(model: Any, tokenizer: Any, states: Sequence[dict[str, Any]], reward: StepReward,
               args: GRPOConfig, rollout: str = "legal", scoring: str = "sum") -> list[dict]:
    """GRPO on `states` (plan_states rows); `rollout` is "legal" (sample among the legal steps, as the
    planner acts, ranked by `scoring`: sum or mean) or "free" (TRL's own generation). Returns the
    trainer's log history."""
    if not states:
        raise ValueError("train_grpo: no plan states")
    if rollout not in ROLLOUTS:
        raise ValueError(f"train_grpo: rollout={rollout!r}: use one of {', '.join(ROLLOUTS)}")
    if args.remove_unused_columns:
        raise ValueError("train_grpo: remove_unused_columns must be false (the reward reads the state "
                         "columns)")
    rollout_func = None
    if rollout == "legal":  # with the reward's program cache: each state is replayed once
        legal = legal_steps(states, reward.coder, reward.tasks, reward.programs)
        rollout_func = LegalRollout(legal, seed=args.seed, scoring=scoring)
    dataset = Dataset.from_list(list(states))
    trainer = GRPOTrainer(model=model, reward_funcs=reward, args=args, train_dataset=dataset,
                          processing_class=tokenizer, rollout_func=rollout_func)
    trainer.train()
    return trainer.state.log_history
