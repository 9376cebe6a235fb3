"""Greedy planner: port first, the legal list in order, tried steps skipped until an acceptance,
stopping at a local optimum, legal steps only; and a run through `run_optimize` that stops by itself.

    pytest tests/planners/test_greedy.py
"""

from __future__ import annotations

import io
import random

import pytest
from rich.console import Console

from mtmc.budgets import Budgets
from mtmc.optimize import run_optimize
from mtmc.program import Program
from mtmc.protocols import PlanState, StepRecord
from mtmc.strategies import PORT, STOP, Strategy
from mtmc.tasks import Task, TaskSummary
from mtmc.tasks.summary import TensorInfo
from planners.greedy import GreedyPlanner
from tests.graph.fakes import TaggedVerifier, tiny_task
from tests.scripted_coder import ScriptedCoder

TASK = Task(name="t", source="")
SUMMARY = TaskSummary("sm", {"softmax": 1}, [TensorInfo([4096, 4096], "float32")],
                      [TensorInfo([4096, 4096], "float32")], 0, 5 * 4096 * 4096, 0, 2 * 4096 * 4096 * 4)
PROGRAM = Program("class ModelNew: ...")
MENU = ["fuse epilogue", "tile BLOCK=1024", "vectorize", "num_warps 8", "autotune", "stop"]


def state(legal, *, program=PROGRAM, history=()) -> PlanState:
    return PlanState(task=TASK, summary=SUMMARY, program=program, verdict=None,
                     legal=[Strategy.parse(s) for s in legal], history=list(history), steps_left=10)


def record(i, strategy, accepted) -> StepRecord:
    return StepRecord(i, strategy, "ok" if accepted else "incorrect", accepted, None, 0.0)


def history(*steps: tuple[str, bool]) -> list[StepRecord]:
    return [record(i, text, accepted) for i, (text, accepted) in enumerate(steps)]


def propose(legal, *steps: tuple[str, bool], planner=None) -> str:
    return str((planner or GreedyPlanner()).propose(state(legal, history=history(*steps))))


def play(planner, legal, accepts: set[str] = frozenset(), limit: int = 50) -> list[tuple[str, bool]]:
    """Run the planner on a fixed menu after an accepted port; a step in `accepts` is accepted each
    time it is proposed, any other rejected. Returns the (step, accepted) list."""
    steps = [("port", True)]
    while len(steps) < limit:
        step = planner.propose(state(legal, history=history(*steps)))
        if step.is_stop:
            return steps[1:]
        assert step in [Strategy.parse(s) for s in legal]
        steps.append((str(step), str(step) in accepts))
    raise AssertionError(f"no stop after {limit} steps: {steps}")


# ---------------------------------------------------------------------------------------------------
# the climb


def test_ports_first_with_whatever_the_coder_offers_first():
    assert GreedyPlanner().propose(state(["port"], program=None)) == PORT
    assert propose(["library conv2d", "port"]) == "library conv2d"
    assert propose(["library conv2d", "port"], ("library conv2d", False)) == "port"  # the next offer
    assert propose(["port"], ("port", False)) == "stop"  # no program, nothing untried: give up


def test_walks_the_legal_list_in_order_then_stops_when_all_were_rejected():
    assert play(GreedyPlanner(), MENU) == [(s, False) for s in MENU[:-1]]
    assert propose(["stop", "vectorize"], ("port", True)) == "vectorize"  # stop is not a step to try


def test_skips_the_steps_already_tried_on_this_program():
    assert propose(MENU, ("port", True)) == "fuse epilogue"
    assert propose(MENU, ("port", True), ("fuse epilogue", False)) == "tile BLOCK=1024"
    assert propose(MENU, ("port", True), ("tile BLOCK=1024", False), ("fuse epilogue", False)) == "vectorize"


def test_an_acceptance_resets_the_tried_steps():
    tried = [("port", True), ("fuse epilogue", False), ("tile BLOCK=1024", False)]
    assert propose(MENU, *tried, ("vectorize", True)) == "fuse epilogue"  # new program: try again
    assert play(GreedyPlanner(), MENU, accepts={"vectorize"}) == [
        ("fuse epilogue", False), ("tile BLOCK=1024", False), ("vectorize", True),
        ("fuse epilogue", False), ("tile BLOCK=1024", False), ("num_warps 8", False), ("autotune", False)]


def test_repeats_an_accepted_fusion_but_never_an_accepted_knob():
    assert propose(MENU, ("port", True), ("fuse epilogue", True)) == "fuse epilogue"  # fusions add up
    assert propose(MENU, ("port", True), ("fuse epilogue", True), ("tile BLOCK=1024", True),
                   ("fuse epilogue", False), ("vectorize", True)) == "fuse epilogue"
    knob_first = ["num_warps 8", "vectorize", "stop"]
    assert propose(knob_first, ("port", True), ("num_warps 8", True)) == "vectorize"
    assert propose(knob_first, ("port", True), ("num_warps 8", True), ("vectorize", True)) == "stop"


def test_knobs_that_undo_each_other_do_not_cycle():
    """Without timings the gate accepts every correct step, and a coder may keep offering both tile
    sizes: each is accepted once, then the climb ends instead of alternating until max_steps."""
    menu = ["tile BLOCK=1024", "tile BLOCK=2048", "num_warps 8", "stop"]
    assert play(GreedyPlanner(), menu, accepts=set(menu)) == [(s, True) for s in menu[:-1]]


def test_stops_when_every_legal_step_was_tried_or_nothing_is_legal():
    rejected = [("port", True)] + [(s, False) for s in MENU[:-1]]
    assert propose(MENU, *rejected) == "stop"
    assert propose(MENU[2:], *rejected[:1], ("vectorize", False), ("num_warps 8", False),
                   ("autotune", False)) == "stop"  # steps no longer offered do not matter
    assert propose(["stop"], ("port", True)) == "stop"
    assert GreedyPlanner().propose(state([], program=None)) == STOP


def test_max_tries_per_program_caps_the_rejections_on_one_program():
    planner = GreedyPlanner(max_tries_per_program=2)
    assert propose(MENU, ("port", True), ("fuse epilogue", False), planner=planner) == "tile BLOCK=1024"
    assert propose(MENU, ("port", True), ("fuse epilogue", False), ("tile BLOCK=1024", False),
                   planner=planner) == "stop"
    assert play(planner, MENU, accepts={"tile BLOCK=1024"}) == [
        ("fuse epilogue", False), ("tile BLOCK=1024", True), ("fuse epilogue", False), ("vectorize", False)]
    with pytest.raises(ValueError):
        GreedyPlanner(max_tries_per_program=0)


def test_only_legal_steps_and_never_the_same_step_twice_on_one_program():
    rng = random.Random(0)
    vocabulary = MENU[:-1] + ["fuse prologue", "num_warps 4", "persistent", "group_m 8"]
    for _ in range(300):
        legal = rng.sample(vocabulary, rng.randint(0, len(vocabulary))) + ["stop"]
        tries = [(rng.choice(vocabulary), rng.random() < 0.3) for _ in range(rng.randint(0, 8))]
        steps = [("port", True), *tries]
        step = GreedyPlanner().propose(state(legal, history=history(*steps)))
        assert step.is_stop or str(step) in legal
        last = max(i for i, (_, ok) in enumerate(steps) if ok)
        since = {text for text, _ in steps[last + 1:]}
        assert step.is_stop or str(step) not in since
        accepted = {text for text, ok in steps if ok}
        assert step.is_stop or str(step) not in accepted or step.kind == "fuse"


# ---------------------------------------------------------------------------------------------------
# end to end


def test_run_optimize_climbs_and_stops_by_itself_before_max_steps(tmp_path):
    script = {"port": ["ok@2.0"], "fuse epilogue": ["incorrect"], "tile BLOCK=1024": ["ok@1.5"],
              "vectorize": ["ok@3.0"], "num_warps 8": ["ok@1.5"], "autotune": ["raise:no config fits"]}
    coder = ScriptedCoder(script)  # offers the steps not yet in the accepted program, then stop
    result = run_optimize(tiny_task(), GreedyPlanner(), coder, TaggedVerifier(eager_ms=2.0), tmp_path,
                          budgets=Budgets(max_steps=30, max_retries=1, time_limit_s=600.0),
                          console=Console(file=io.StringIO(), width=120))
    steps = [(r["strategy"], r["accepted"]) for r in result.history]
    assert steps == [
        ("port", True), ("fuse epilogue", False), ("tile BLOCK=1024", True),  # incorrect; faster
        ("fuse epilogue", False), ("vectorize", False), ("num_warps 8", True),  # new program: fuse again
        ("fuse epilogue", False), ("vectorize", False), ("autotune", False)]  # slower; coder error
    assert result.stop_reason == "planner_stop" and len(steps) < 30
    assert result.program.source.count("# step: ") == 3  # port, tile, num_warps
