"""The random planner: uniform over the legal steps, stopping with a fixed probability.

The baseline every learned planner must beat. Each choice is drawn from an RNG seeded by
(seed, step index), so a run is reproducible and a resumed run makes the same choices an
uninterrupted one would.
"""

from __future__ import annotations

import random

from mtmc.protocols import PlanState
from mtmc.strategies import STOP, Strategy


class RandomPlanner:
    def __init__(self, seed: int = 0, stop_prob: float = 0.1) -> None:
        if not 0.0 <= stop_prob <= 1.0:
            raise ValueError(f"stop_prob must be in [0, 1], got {stop_prob}")
        self.seed = seed
        self.stop_prob = stop_prob

    def propose(self, state: PlanState) -> Strategy:
        moves = [s for s in state.legal if not s.is_stop]
        if not moves or state.steps_left <= 0:
            return STOP
        rng = random.Random(f"{self.seed}:{len(state.history)}")
        if STOP in state.legal and rng.random() < self.stop_prob:
            return STOP
        return rng.choice(moves)
