"""A planner that replays a fixed list of strategy texts, one per macro step (for tests and demos).

    ScriptedPlanner(["port", "fuse epilogue", "num_warps 8"])   # then stop

Step i (counted from the planner's history, so a resumed run picks up where it was) gets entry i;
past the end it stops. It does not second-guess the script: an entry that is not legal now is
still proposed, and the graph refuses it loudly.
"""

from __future__ import annotations

from collections.abc import Sequence

from mtmc.protocols import PlanState
from mtmc.strategies import STOP, Strategy


class ScriptedPlanner:
    def __init__(self, steps: Sequence[str]) -> None:
        self.steps = [Strategy.parse(text) for text in steps]  # a typo fails here, not mid-run

    def propose(self, state: PlanState) -> Strategy:
        index = len(state.history)
        return self.steps[index] if index < len(self.steps) else STOP
