"""TemplateMenu: the template coder's legal steps as the Menu role (mtmc/protocols.py).

It knows which fusions exist and which block sizes make sense for the traced shapes, so other coders
offer it too: an LLM coder takes one (conf/coder/openai.yaml, `menu:`) and follows its programs with
a shadow of the template's own (coders/llm/menu.py), without importing the template coder.
"""

from __future__ import annotations

from coders.template.coder import TemplateCoder
from mtmc.program import Program
from mtmc.protocols import CoderError
from mtmc.strategies import Strategy
from mtmc.tasks import Task


class TemplateMenu:
    def __init__(self) -> None:
        self.coder = TemplateCoder()

    def legal_strategies(self, task: Task, program: Program | None) -> list[Strategy]:
        return self.coder.legal_strategies(task, program)

    def follow(self, task: Task, program: Program | None, strategy: Strategy) -> Program | None:
        """The template's program after `strategy`, or None where the template cannot take it (a
        task it cannot port, a step it refuses)."""
        try:
            return self.coder.apply(task, program, strategy)
        except CoderError:
            return None
