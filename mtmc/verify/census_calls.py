"""A candidate's forward call under the op census (proof.py): its outputs and what the
instruments saw during it, one call at a time or summed over many (`CallAudit`)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import torch

from mtmc.verify import proof


def censused(model: torch.nn.Module, inputs: list[Any], counter: proof.LaunchCounter,
              allowed: frozenset[str]) -> tuple[Any, dict[str, Any]]:
    """model(*inputs) under the op census: its outputs, and what the instruments saw during it."""
    launches_before, exits_before = counter.launches, Counter(counter.host_exits)
    census = proof.OpCensus(counter, allowed)
    with torch.no_grad(), census:
        pops_before = counter.pops
        counter.in_forward = True
        try:
            raw = model(*inputs)
        finally:
            counter.in_forward = False
        broken = proof.census_intact(census, pops_before)
    return raw, {"launches": counter.launches - launches_before, "foreign": dict(census.foreign),
                 "host_exits": dict(counter.host_exits - exits_before), "census_broken": broken}


class CallAudit:
    """The census over the forwards after the cases (the state check's, on a GPU the profiled and
    timed ones), summed: the main process judges them like a case's (decoy, foreign ops, host
    exits, a popped census). Their outputs are checked elsewhere or not at all; their work is."""

    def __init__(self, counter: proof.LaunchCounter, allowed: frozenset[str]) -> None:
        self.counter, self.allowed = counter, allowed
        self.calls = self.without_launches = 0
        self.foreign: Counter[str] = Counter()
        self.host_exits: Counter[str] = Counter()
        self.census_broken = ""

    def __call__(self, model: torch.nn.Module, inputs: list[Any]) -> Any:
        raw, seen = censused(model, inputs, self.counter, self.allowed)
        self.calls += 1
        self.without_launches += seen["launches"] == 0
        self.foreign.update(seen["foreign"])
        self.host_exits.update(seen["host_exits"])
        self.census_broken = self.census_broken or seen["census_broken"]
        return raw

    def report(self) -> dict[str, Any]:
        return {"calls": self.calls, "without_launches": self.without_launches,
                "foreign_ops": dict(self.foreign), "host_exits": dict(self.host_exits),
                "census_broken": self.census_broken}
