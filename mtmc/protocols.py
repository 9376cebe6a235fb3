"""The roles of the loop, as Protocols: anything with the methods plugs in (no base classes).

Planner, Coder and Verifier are the loop's three roles; a Menu is the part of a coder's knowledge a
planner needs (the legal steps of a program), a role of its own so that one coder can offer another's
menu (an LLM coder the template coder's) without importing it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from mtmc.program import Program
from mtmc.strategies import Strategy
from mtmc.tasks import Task, TaskSummary
from mtmc.verify.verdict import Verdict


class CoderError(RuntimeError):
    """The coder could not produce a program (unsupported op, no code in an LLM reply, ...).

    `usage` is what the failed attempt cost (an LLM's tokens and latency), so the trajectory
    counts it like any other attempt's."""

    def __init__(self, message: str = "", usage: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.usage = usage


class RoleUnavailable(RuntimeError):
    """A role's backend cannot answer (a model server down or refusing): no fault of the step, so the
    run stops, and `resume=<run folder>` continues it once the backend is back."""


@dataclass
class StepRecord:
    """One finished macro step, as the planner sees it."""

    index: int
    strategy: str
    status: str  # the verdict status of the last attempt
    accepted: bool
    speedup: float | None  # over eager, when timed
    reward: float
    reason: str = ""  # the last attempt's Verdict.reason: why it failed, where the verifier names it


@dataclass
class PlanState:
    """What a planner sees when it proposes the next step."""

    task: Task
    summary: TaskSummary
    program: Program | None  # the current accepted program; None before the port
    verdict: Verdict | None  # the current program's verdict
    legal: list[Strategy]  # the steps that make sense now (always includes stop once ported)
    history: list[StepRecord] = field(default_factory=list)
    steps_left: int = 0


@runtime_checkable
class Planner(Protocol):
    def propose(self, state: PlanState) -> Strategy: ...


@runtime_checkable
class Menu(Protocol):
    """The legal steps of a program for a task: what a planner may propose next.

    `legal_strategies` reads the menu's own record of a program (a program its coder wrote).
    `follow` gives that record after one more step (`program` None: before the port), or None where
    the menu cannot follow; with it a coder whose programs carry no structure a menu can read (an
    LLM's: source only) keeps a shadow record of each program and still offers the steps of where it
    is (coders/llm/menu.py)."""

    def legal_strategies(self, task: Task, program: Program | None) -> list[Strategy]: ...

    def follow(self, task: Task, program: Program | None, strategy: Strategy) -> Program | None: ...


@runtime_checkable
class Coder(Protocol):
    def apply(self, task: Task, program: Program | None, strategy: Strategy,
              feedback: Verdict | None = None) -> Program: ...

    def legal_strategies(self, task: Task, program: Program | None) -> list[Strategy]: ...


@runtime_checkable
class Verifier(Protocol):
    def verify(self, task: Task, program: Program) -> Verdict: ...
