"""`TreeEnv`: the optimize loop over a recorded tree, with no coder and no verifier, for training and
for comparing planners in seconds.

    env = TreeEnv(load_tree(path), tasks, max_steps=4, call_cost=0.01)
    state = env.reset("softmax_lastdim")          # a PlanState, as a planner sees it in the graph
    while not env.done:
        result = env.step(planner.propose(env.plan_state()))
    env.episode()                                 # final program, calls, return

It mirrors mtmc/graph/nodes.py step for step: the legal menu is the coder's (read from the tree, plus
`stop` once ported), a step's verdict is the recorded one (a step the coder refused is a compile
error that cost no verifier call), the gate is the graph's own `decide` (a failed step is retried
`max_retries` times: a retry is the program the recording's retry reached, where the coder wrote
another one from the failed verdict, such as a tf32_beyond_eager port's fp32-exact twin; else the
same program again, the same verdict and another call, as in a live run), and the budget is
`max_steps`. The time limit is not modelled. Each StepRecord carries its last attempt's
`Verdict.reason`, as the graph's do (the heuristic planner reads it; the LM planner's prompt shows it,
so `state_prompt(env.plan_state())` is the live prompt). Retries beyond those the tree was recorded
with (`mtmc tree record max_retries=`) repeat its last recorded attempt.

Return = log(port time / final time) - call_cost * verifier calls. Each step's reward is its share:
the gain in log time of the accepted program (0 for the port, the baseline) minus its calls' cost,
so the rewards of an episode add up to its return. Without timings (a tree recorded on the CPU) the
log term is 0. A program the recording did not expand (the deepest level, or a cut-off run) offers
only `stop`, so within the recorded depth an episode never meets an unrecorded program.

The tree is read-only while an environment walks it: each program's menu is read and parsed once
(GRPO replays states thousands of times a minute, and parsing the menu again on every `done`,
`legal()` and `step` was most of a replay's time).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from mtmc.graph.nodes import decide
from mtmc.graph.state import Outcome
from mtmc.program import Program
from mtmc.protocols import Planner, PlanState, StepRecord
from mtmc.reward import RewardConfig, step_reward
from mtmc.strategies import STOP, Strategy
from mtmc.tasks import Task, TaskSummary, summarize
from mtmc.tree.format import verdict_of
from mtmc.tree.index import Step, Tree
from mtmc.verify.verdict import Status, Verdict


@dataclass(frozen=True)
class StepResult:
    strategy: str
    verdict: Verdict | None  # None for `stop`
    outcome: Outcome | None  # accepted or rejected (retries are inside the step); None for `stop`
    calls: int  # verifier calls the step cost
    reward: float  # the environment's reward (see the module docstring), not the graph's step reward
    done: bool


@dataclass(frozen=True)
class Episode:
    task: str
    port_ms: float | None
    final_ms: float | None
    final: str | None  # digest of the last accepted program (None: nothing accepted)
    calls: int
    steps: int
    stop_reason: str
    return_: float
    trace: tuple[tuple[int, float | None], ...] = ()  # after each step: (calls so far, accepted ms)

    @property
    def speedup(self) -> float | None:
        """final / port speedup (port time over final time); None without timings or a program."""
        return self.port_ms / self.final_ms if self.port_ms and self.final_ms else None


class TreeEnv:
    def __init__(self, tree: Tree, tasks: Sequence[Task], *, max_steps: int = 4, max_retries: int = 1,
                 call_cost: float = 0.0, reward: RewardConfig | None = None) -> None:
        self.tree, self.max_steps, self.max_retries, self.call_cost = tree, max_steps, max_retries, call_cost
        self.reward_cfg = reward or RewardConfig()
        self.tasks = {task.name: task for task in tasks}
        self._summaries: dict[str, TaskSummary] = {}
        self._menus: dict[tuple[str, str | None], _Menu] = {}

    # --- the episode -------------------------------------------------------------------------------
    def reset(self, task: str) -> PlanState:
        if task not in self.tasks:
            raise KeyError(f"task {task!r} was not given to the environment")
        self.task, self.node, self.verdict = task, None, None
        self.history: list[StepRecord] = []
        self.port_ms: float | None = None
        self.calls, self.return_, self.stop_reason = 0, 0.0, None
        self.trace: list[tuple[int, float | None]] = []
        return self.plan_state()

    @property
    def done(self) -> bool:
        """The graph's plan node's checks, in its order: the step budget, then an empty menu (each
        sets the stop reason the first time it holds)."""
        if self.stop_reason is None and len(self.history) >= self.max_steps:
            self.stop_reason = "max_steps"
        if self.stop_reason is None and not any(not s.is_stop for s in self._menu().legal):
            self.stop_reason = "nothing_legal"
        return self.stop_reason is not None

    def legal(self) -> list[Strategy]:
        """The coder's menu at the current program, as recorded; `stop` once ported. A program the
        recording did not expand offers `stop` alone."""
        return list(self._menu().legal)

    def step(self, strategy: Strategy) -> StepResult:
        if self.done:
            raise RuntimeError(f"the episode has ended ({self.stop_reason}): reset() first")
        if strategy.is_stop:
            self.stop_reason = "planner_stop"
            return StepResult(str(strategy), None, None, 0, 0.0, True)
        step, verdict, calls, outcome = self._attempts(self._recorded_step(strategy))
        previous = self.verdict
        self.history.append(StepRecord(
            index=len(self.history), strategy=step.strategy, status=str(verdict.status),
            accepted=outcome == "accepted", speedup=verdict.speedup_eager,
            reward=step_reward(verdict, previous, self.reward_cfg, step=len(self.history)),
            reason=verdict.reason))
        gain = 0.0
        if outcome == "accepted":
            if self.port_ms is None:
                self.port_ms = verdict.candidate_ms
            elif previous.candidate_ms and verdict.candidate_ms:
                gain = math.log(previous.candidate_ms / verdict.candidate_ms)
            self.node, self.verdict = step.digest, verdict  # the accepted attempt's step
        self.calls += calls
        self.trace.append((self.calls, self.verdict.candidate_ms if self.verdict is not None else None))
        reward = gain - self.call_cost * calls
        self.return_ += reward
        return StepResult(step.strategy, verdict, outcome, calls, reward, self.done)

    def episode(self) -> Episode:
        final_ms = self.verdict.candidate_ms if self.verdict is not None else None
        return Episode(self.task, self.port_ms, final_ms, self.node, self.calls, len(self.history),
                       self.stop_reason or "running", self.return_, tuple(self.trace))

    def plan_state(self) -> PlanState:
        """What the graph's plan node hands a planner. There is no program text offline: a planner
        that reads `state.program` beyond `is None` cannot be replayed on a tree."""
        program = None if self.node is None else Program("", {"tree_node": self.node})
        return PlanState(task=self.tasks[self.task], summary=self._summary(self.task), program=program,
                         verdict=self.verdict, legal=self.legal(), history=list(self.history),
                         steps_left=self.max_steps - len(self.history))

    # --- helpers -----------------------------------------------------------------------------------
    def _menu(self) -> _Menu:
        key = (self.task, self.node)
        if key not in self._menus:
            self._menus[key] = _Menu.read(self.tree, self.task, self.node)
        return self._menus[key]

    def _recorded_step(self, strategy: Strategy) -> Step:
        menu = self._menu()
        if str(strategy) not in menu.steps or strategy not in menu.legal:
            legal = [str(s) for s in menu.legal]
            raise ValueError(f"{str(strategy)!r} is not among the legal steps {legal}")
        return menu.steps[str(strategy)]

    def _attempts(self, step: Step) -> tuple[Step, Verdict, int, Outcome]:
        """The step as the graph's code -> verify -> gate loop runs it: retried while it fails, each
        retry the recorded one where the coder wrote another program, else the attempt before's again.
        Returns the last attempt's step and verdict."""
        calls = 0
        for attempt in range(self.max_retries + 1):
            if attempt:
                step = self.tree.retry(self.task, self.node, step.strategy, attempt) or step
            if step.digest is None:  # the coder refused: a compile error, no verifier call
                verdict = Verdict(Status.COMPILE_ERROR, message=f"coder error: {step.error}")
            else:
                verdict, calls = verdict_of(self.tree.node(self.task, step.digest)), calls + 1
            outcome = decide(verdict, self.verdict, attempt=attempt, max_retries=self.max_retries)
            if outcome != "retry":
                return step, verdict, calls, outcome
        raise AssertionError("decide() retried past max_retries")

    def _summary(self, task: str) -> TaskSummary:
        if task not in self._summaries:
            self._summaries[task] = summarize(self.tasks[task])
        return self._summaries[task]


@dataclass(frozen=True)
class _Menu:
    """One program's menu as the environment offers it, and its recorded steps by their text."""

    legal: tuple[Strategy, ...]
    steps: dict[str, Step]

    @classmethod
    def read(cls, tree: Tree, task: str, node: str | None) -> _Menu:
        steps = tree.steps(task, node)
        recorded = tuple(Strategy.parse(s.strategy) for s in steps)
        if node is None:
            legal = recorded
        elif not tree.is_expanded(task, node):
            legal = (STOP,)
        else:
            legal = (*recorded, STOP)
        return cls(legal, {s.strategy: s for s in steps})


def run_episode(env: TreeEnv, planner: Planner, task: str) -> Episode:
    """One planner's episode on one task, as `mtmc optimize` would run it with verifier=replay."""
    env.reset(task)
    while not env.done:
        env.step(planner.propose(env.plan_state()))
    return env.episode()
