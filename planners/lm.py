"""The LM planner: a causal language model, restricted to the legal steps, picks the next one.

    LMPlanner(checkpoint="runs/train/<time>/checkpoint")            greedy: the most likely legal step
    LMPlanner(checkpoint="Qwen/Qwen2.5-0.5B", temperature=0.7)      sampled, reproducible per step
    LMPlanner(checkpoint=..., scoring="mean")                        length-normalised scores

The model never writes a step freely at inference: every legal strategy's canonical text is scored
as a completion of the prompt (the sum of its tokens' log-probabilities, end-of-sequence included,
in one batched forward), and the planner takes the argmax or samples from the softmax of the scores
over the legal set. That is the model's own distribution renormalized to the legal steps, so an
untrained checkpoint still only proposes legal steps, and a trained one cannot derail a run with
text that does not parse. `scoring="mean"` ranks by the mean log-probability per token instead, so a
short step (`stop`) is not preferred for its length alone (mtmc/lm_policy.py, SCORINGS).

The prompt, the scoring, the sampling and the loading live in mtmc/lm_policy.py, which `mtmc train`
imports too, so training sees exactly what inference sees.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

import torch

from mtmc.lm_policy import (
    checked_scoring,
    completion_text,
    load_policy,
    sample_index,
    score_completions,
    state_prompt,
)
from mtmc.protocols import PlanState
from mtmc.strategies import Strategy


class LMPlanner:
    def __init__(self, checkpoint: str, device: str = "auto", temperature: float = 0.0,
                 seed: int = 0, scoring: str = "sum") -> None:
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0 (0 = greedy), got {temperature}")
        self.scoring = checked_scoring(scoring)
        self.checkpoint = str(checkpoint)
        self.temperature = temperature
        self.seed = seed
        self.model, self.tokenizer = load_policy(checkpoint, device)

    def propose(self, state: PlanState) -> Strategy:
        prompt = state_prompt(state)
        scores = self.score(prompt, [completion_text(s) for s in state.legal])
        return state.legal[self.choose(scores, step=len(state.history))]

    @torch.no_grad()
    def score(self, prompt: str, completions: Sequence[str]) -> list[float]:
        """log p(completion + eos | prompt) for each completion (or its mean per token, scoring="mean"),
        in one batched forward."""
        scored = score_completions(self.model, self.tokenizer, prompt, completions)
        return [c.scored(self.scoring) for c in scored]

    def choose(self, scores: Sequence[float], step: int) -> int:
        """Argmax (first on ties) at temperature 0; otherwise a draw from softmax(scores / T) with an
        RNG seeded by (seed, step), so a resumed run makes the choices an uninterrupted one would."""
        return sample_index(random.Random(f"{self.seed}:{step}"), scores, self.temperature)
