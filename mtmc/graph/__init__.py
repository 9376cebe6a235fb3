"""The plan -> code -> verify -> gate loop as a LangGraph state machine (see build.py for the edges)."""

from mtmc.graph.build import build_graph, recursion_limit, run_config
from mtmc.graph.context import Context
from mtmc.graph.state import OptimizeState, initial_state

__all__ = ["Context", "OptimizeState", "build_graph", "initial_state", "recursion_limit", "run_config"]
