"""GRPO on the planner's choices: TRL's GRPOTrainer, with the coder and the verifier as the reward.

    reward = StepReward(coder, verifier, tasks={t.name: t for t in train_tasks}, reward=RewardConfig())
    log_history = train_grpo(model, tokenizer, plan_states(runs), reward, GRPOConfig(output_dir=...))

A first slice, single-step on purpose: each prompt is one state taken from a recorded trajectory
(mtmc/train/data.py `plan_states`), the policy writes one strategy, and its reward is that one step's
`step_reward` (mtmc/reward.py) once the coder has applied it and the verifier has judged it. Nothing
is rolled out past that step, so what a step sets up for later steps (and what stopping forfeits) is
not seen; multi-step episodes through the optimize graph (TRL's `rollout_func`) are the next slice.

The policy writes its strategy freely here (GRPO needs the log-probabilities of sampled tokens),
whereas LMPlanner only ever scores the legal steps. A completion that does not parse, or a strategy
that is not legal in that state, earns `RewardConfig.rejected`, the worst outcome there is: a
planner that leaves the menu gets nothing done. `stop` earns 0: it keeps the current program.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer

from mtmc.program import Program
from mtmc.protocols import Coder, CoderError, Verifier
from mtmc.reward import RewardConfig, step_reward
from mtmc.strategies import Strategy, StrategyError
from mtmc.tasks import Task
from mtmc.verify.verdict import Status, Verdict


class StepReward:
    """TRL reward function: `(prompts, completions, task, step, accepted, previous) -> rewards`.

    The extra arguments are the dataset's columns (see `plan_states`). Programs and verdicts are
    cached in memory by (task, accepted steps) and (task, program digest): a GRPO group samples the
    same strategy many times, and each distinct candidate reaches the verifier once. (The verifier's
    own SQLite cache, `verifier.cache_path`, keeps them across runs.)
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

    def __call__(self, prompts: list[str], completions: list[str], task: list[str], step: list[int],
                 accepted: list[list[str]], previous: list[str], **kwargs: Any) -> list[float]:
        return [self.score(*row) for row in zip(completions, task, step, accepted, previous, strict=True)]

    def score(self, completion: str, task_name: str, step: int, accepted: Sequence[str],
              previous: str) -> float:
        task = self.tasks[task_name]
        program = self.replay(task, tuple(accepted))
        try:
            strategy = Strategy.parse(completion)
        except StrategyError:
            return self.reward.rejected
        if strategy not in self.coder.legal_strategies(task, program):
            return self.reward.rejected
        if strategy.is_stop:
            return 0.0
        verdict = self.judge(task, program, strategy)
        before = Verdict.from_dict(json.loads(previous)) if previous else None
        return step_reward(verdict, before, self.reward, step=step)

    def replay(self, task: Task, accepted: tuple[str, ...]) -> Program | None:
        """The program the recorded accepted steps made, rebuilt by the coder (None before the port).

        Exact for a deterministic coder such as the template coder: same program, same strategy, same
        result. An LLM coder would rebuild a different program; it would need the recorded sources.
        """
        if not accepted:
            return None
        key = (task.name, accepted)
        if key not in self.programs:
            before = self.replay(task, accepted[:-1])
            self.programs[key] = self.coder.apply(task, before, Strategy.parse(accepted[-1]))
        return self.programs[key]

    def judge(self, task: Task, program: Program | None, strategy: Strategy) -> Verdict:
        try:
            candidate = self.coder.apply(task, program, strategy)
        except CoderError as err:  # what the optimize graph's code node makes of it
            return Verdict(Status.COMPILE_ERROR, message=f"coder error: {err}")
        key = (task.name, candidate.digest)
        if key not in self.verdicts:
            self.verifier_calls += 1
            self.verdicts[key] = self.verifier.verify(task, candidate)
        return self.verdicts[key]


def train_grpo(model: Any, tokenizer: Any, states: Sequence[dict[str, Any]], reward: StepReward,
               args: GRPOConfig) -> list[dict]:
    if not states:
        raise ValueError("train_grpo: no plan states")
    if args.remove_unused_columns:
        raise ValueError("train_grpo: remove_unused_columns must be false (the reward reads the state "
                         "columns)")
    dataset = Dataset.from_list(list(states))
    trainer = GRPOTrainer(model=model, reward_funcs=reward, args=args, train_dataset=dataset,
                          processing_class=tokenizer)
    trainer.train()
    return trainer.state.log_history
