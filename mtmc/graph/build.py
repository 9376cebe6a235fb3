"""The optimize loop as a LangGraph StateGraph; the caller compiles it with a checkpointer.

    graph = build_graph().compile(checkpointer=saver)
    graph.invoke(initial_state(), run_config(thread_id, budgets), context=Context(..., budgets=budgets))
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END, START, StateGraph

from mtmc.budgets import Budgets
from mtmc.graph import nodes
from mtmc.graph.context import Context
from mtmc.graph.state import OptimizeState


def build_graph() -> StateGraph:
    graph = StateGraph(OptimizeState, context_schema=Context)
    graph.add_node("baseline", nodes.baseline)
    graph.add_node("plan", nodes.plan)
    graph.add_node("code", nodes.code)
    graph.add_node("verify", nodes.verify)
    graph.add_node("gate", nodes.gate)
    graph.add_node("finish", nodes.finish)

    # summarize the task once, then the loop
    graph.add_edge(START, "baseline")
    graph.add_edge("baseline", "plan")
    # a budget or the planner's stop ends the run; otherwise the coder applies the step
    graph.add_conditional_edges("plan", nodes.route_after_plan, ["code", "finish"])
    # a CoderError is already a verdict: skip the verifier
    graph.add_conditional_edges("code", nodes.route_after_code, ["verify", "gate"])
    graph.add_edge("verify", "gate")
    # retry feeds the failing verdict back to the coder; accept/reject moves on to the next step
    graph.add_conditional_edges("gate", nodes.route_after_gate, ["code", "plan"])
    graph.add_edge("finish", END)
    # The path maps repeat the routers' Literal types on purpose: with an explicit map a router
    # that returns an unknown name raises, even if someone replaces it with an unannotated function.
    return graph


RECURSION_SLACK = 5


def recursion_limit(budgets: Budgets) -> int:
    """A backstop to the budgets, passed on every invoke: the supersteps a worst-case run takes
    (baseline; per step a plan and a code, verify, gate per attempt; the last plan and finish), plus
    one because LangGraph raises on reaching the limit before it sees END, plus slack."""
    supersteps = 1 + budgets.max_steps * (1 + 3 * (budgets.max_retries + 1)) + 2
    return supersteps + 1 + RECURSION_SLACK


def run_config(thread_id: str, budgets: Budgets) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}, "recursion_limit": recursion_limit(budgets)}
