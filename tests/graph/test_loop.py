"""The optimize graph on scripted fakes: every route of the gate, the budgets, CoderError, routing errors.

    pytest tests/graph/test_loop.py
"""

from __future__ import annotations

import itertools
import math

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import GraphRecursionError

from mtmc.budgets import Budgets
from mtmc.graph import Context, build_graph, initial_state, nodes, recursion_limit, run_config
from mtmc.graph.build import RECURSION_SLACK
from mtmc.reward import RewardConfig
from tests.graph.fakes import TaggedVerifier, tiny_task
from tests.scripted_coder import ScriptedCoder, applied_steps
from tests.scripted_planner import ScriptedPlanner


def run(steps, script=None, *, verifier=None, coder=None, max_steps=8, max_retries=1,
        time_limit_s=None, clock=None, events=None):
    budgets = Budgets(max_steps=max_steps, max_retries=max_retries, time_limit_s=time_limit_s)
    context = Context(task=tiny_task(), planner=ScriptedPlanner(steps), coder=coder or ScriptedCoder(script),
                      verifier=verifier or TaggedVerifier(), budgets=budgets)
    if events is not None:
        context.on_event = events.append
    if clock is not None:
        context.clock = clock
    graph = build_graph().compile(checkpointer=InMemorySaver())
    return graph.invoke(initial_state(), run_config("test", budgets), context=context)


def outcomes(state):
    return [(r["step"], r["attempt"], r["strategy"], r["outcome"], r["status"]) for r in state["trajectory"]]


# ---------------------------------------------------------------------------------------------------
# the gate's three routes


def test_accepted_steps_become_the_current_program():
    state = run(["port", "fuse epilogue", "vectorize"])
    assert outcomes(state) == [(0, 0, "port", "accepted", "ok"), (1, 0, "fuse epilogue", "accepted", "ok"),
                               (2, 0, "vectorize", "accepted", "ok")]
    assert applied_steps(state["program"]["source"]) == ["port", "fuse epilogue", "vectorize"]
    assert state["stop_reason"] == "planner_stop" and state["finished"]
    assert [r["accepted"] for r in state["history"]] == [True, True, True]
    assert [r["reward"] for r in state["history"]] == [RewardConfig().correct] * 3
    assert "+# step: fuse epilogue -> ok" in state["trajectory"][1]["diff"]


def test_retry_feeds_the_failing_verdict_back_then_accepts():
    seen = []

    class SpyCoder(ScriptedCoder):
        def apply(self, task, program, strategy, feedback=None):
            seen.append((str(strategy), feedback and str(feedback.status)))
            return super().apply(task, program, strategy, feedback)

    state = run(["port", "fuse epilogue"], coder=SpyCoder({"fuse epilogue": ["incorrect", "ok"]}))
    assert outcomes(state)[1:] == [(1, 0, "fuse epilogue", "retry", "incorrect"),
                                   (1, 1, "fuse epilogue", "accepted", "ok")]
    assert seen == [("port", None), ("fuse epilogue", None), ("fuse epilogue", "incorrect")]
    assert len(state["history"]) == 2  # a retry is part of its step, not a new step
    assert state["history"][1]["accepted"]


def test_exhausted_retries_reject_and_keep_the_current_program():
    state = run(["port", "fuse epilogue", "vectorize"], {"fuse epilogue": ["incorrect"]}, max_retries=2)
    assert [o[3] for o in outcomes(state)] == ["accepted", "retry", "retry", "rejected", "accepted"]
    assert applied_steps(state["program"]["source"]) == ["port", "vectorize"]
    rejected = state["history"][1]
    assert not rejected["accepted"] and rejected["status"] == "incorrect"
    assert rejected["reward"] == RewardConfig().incorrect


def test_a_slower_correct_program_is_rejected_and_scored_by_log_speedup():
    script = {"port": ["ok@2.0"], "tile BLOCK=1024": ["ok@4.0"], "vectorize": ["ok@1.0"]}
    state = run(["port", "tile BLOCK=1024", "vectorize"], script, verifier=TaggedVerifier(eager_ms=2.0))
    assert [o[3] for o in outcomes(state)] == ["accepted", "rejected", "accepted"]  # slower: no retry
    rewards = [r["reward"] for r in state["history"]]
    assert rewards[1] == pytest.approx(0.2 + math.log(0.5))
    assert rewards[2] == pytest.approx(0.2 + math.log(2.0))  # against the kept 2.0 ms program, not 4.0
    assert state["verdict"]["candidate_ms"] == 1.0


def test_a_failed_port_leaves_no_program():
    state = run(["port"], {"port": ["compile_error"]}, max_retries=0)
    assert state["program"] is None and state["verdict"] is None
    assert state["history"][0]["status"] == "compile_error"


# ---------------------------------------------------------------------------------------------------
# CoderError


def test_coder_error_is_a_failed_attempt_not_a_crash():
    verifier = TaggedVerifier()
    state = run(["port", "vectorize", "autotune"], {"vectorize": ["raise:no vector width fits"]},
                verifier=verifier, max_retries=1)
    assert outcomes(state)[1:3] == [(1, 0, "vectorize", "retry", "compile_error"),
                                    (1, 1, "vectorize", "rejected", "compile_error")]
    assert "no vector width fits" in state["trajectory"][1]["message"]
    assert state["trajectory"][1]["diff"] == "" and state["trajectory"][1]["digest"] is None
    assert verifier.calls == 2  # port and autotune; the coder errors never reached the verifier
    assert applied_steps(state["program"]["source"]) == ["port", "autotune"]


def test_coder_error_then_retry_accepts():
    state = run(["port", "vectorize"], {"vectorize": ["raise:flaky", "ok"]})
    assert [o[3] for o in outcomes(state)] == ["accepted", "retry", "accepted"]


def test_coder_usage_is_recorded_per_attempt():
    state = run(["port"], coder=ScriptedCoder(usage={"prompt_tokens": 7, "completion_tokens": 3}))
    assert state["trajectory"][0]["usage"] == {"prompt_tokens": 7, "completion_tokens": 3}


# ---------------------------------------------------------------------------------------------------
# ends: stop, budgets, nothing legal


def test_planner_stop_ends_the_run_without_a_step():
    events = []
    state = run(["port", "stop", "vectorize"], events=events)
    assert len(state["history"]) == 1 and state["stop_reason"] == "planner_stop"
    assert [e["event"] for e in events] == ["plan", "attempt", "finish"]


def test_max_steps_ends_the_run():
    state = run(["port", "fuse epilogue", "vectorize", "autotune"], max_steps=2)
    assert len(state["history"]) == 2 and state["stop_reason"] == "max_steps"


def test_time_limit_is_checked_before_each_step():
    ticks = itertools.count(step=10.0)  # every clock reading is 10 s after the last: 10 s per node
    state = run(["port", "fuse epilogue", "vectorize", "autotune"], clock=lambda: next(ticks),
                time_limit_s=35.0)
    # baseline 10 + step 0 (plan, code, verify, gate) 40 = 50 >= 35 before step 1
    assert state["stop_reason"] == "time_limit" and len(state["history"]) == 1
    assert state["elapsed_s"] == pytest.approx(60.0)  # plus the plan that stopped


def test_nothing_legal_left_ends_the_run():
    coder = ScriptedCoder(legal=["vectorize"])
    state = run(["port", "vectorize", "vectorize"], coder=coder)
    assert len(state["history"]) == 2 and state["stop_reason"] == "nothing_legal"


def test_an_illegal_proposal_raises():
    with pytest.raises(ValueError, match="persistent"):
        run(["port", "persistent"])


def test_recursion_limit_is_exactly_what_a_worst_case_run_needs():
    # worst case: every step spends every attempt (the port keeps failing, so it stays legal)
    steps, script = ["port"] * 3, {"port": ["incorrect"]}
    state = run(steps, script, max_steps=3, max_retries=2)
    assert len(state["trajectory"]) == 9 and state["stop_reason"] == "max_steps"

    def invoke(limit):
        context = Context(task=tiny_task(), planner=ScriptedPlanner(steps), coder=ScriptedCoder(script),
                          verifier=TaggedVerifier(), budgets=Budgets(max_steps=3, max_retries=2))
        graph = build_graph().compile(checkpointer=InMemorySaver())
        return graph.invoke(initial_state(), {"configurable": {"thread_id": "t"}, "recursion_limit": limit},
                            context=context)

    needed = recursion_limit(Budgets(max_steps=3, max_retries=2)) - RECURSION_SLACK
    assert invoke(needed)["stop_reason"] == "max_steps"
    with pytest.raises(GraphRecursionError):
        invoke(needed - 1)


# ---------------------------------------------------------------------------------------------------
# routing errors never end the run silently


def test_an_unknown_route_name_raises(monkeypatch):
    monkeypatch.setattr(nodes, "route_after_gate", lambda state: "nowhere")  # no Literal annotation
    with pytest.raises(Exception, match="nowhere"):
        run(["port", "vectorize"])


def test_the_gate_router_raises_on_an_unknown_outcome():
    with pytest.raises(ValueError, match="unknown outcome"):
        nodes.route_after_gate({"outcome": "maybe"})
