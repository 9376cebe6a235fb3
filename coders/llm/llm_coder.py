"""LLMCoder: the Coder protocol on top of any `Chat` backend (OpenAI-compatible HTTP, vLLM, HF).

One step is one conversation: the reference, the current program, the step's instruction and, on a
retry, the verifier's verdict with the failed attempt. The reply's program goes back to the loop
untouched; the verifier, not the coder, decides whether it is any good. The steps it offers come
from its `menu` (coders/llm/menu.py). Starting from another coder's port is the composite
`HybridCoder` (coders/llm/hybrid.py), which hands that port to `adopt`.
"""

from __future__ import annotations

from coders.llm import menu as menus
from coders.llm.chat import Chat
from coders.llm.extract import extract_program
from coders.llm.prompt import build_messages
from mtmc.program import Program
from mtmc.protocols import CoderError, Menu
from mtmc.strategies import Strategy
from mtmc.tasks import Task
from mtmc.verify.verdict import Verdict

AttemptKey = tuple[str | None, str]  # (current program's digest, strategy text)


class LLMCoder:
    def __init__(self, chat: Chat, name: str = "llm", menu: Menu | None = None) -> None:
        self.chat = chat
        self.name = name
        self.menu = menu  # None: the generic menu only
        # task name -> the last attempt's key and source: a retry shows the model what failed. Lost on
        # resume, which only means one retry prompt without the failed code.
        self._last: dict[str, tuple[AttemptKey, str]] = {}

    def apply(self, task: Task, program: Program | None, strategy: Strategy,
              feedback: Verdict | None = None) -> Program:
        if strategy.is_stop:
            raise CoderError("`stop` is never applied: the current program is kept")
        key = (program.digest if program else None, str(strategy))
        previous = self._last.get(task.name)
        failed = previous[1] if feedback is not None and previous and previous[0] == key else None
        reply = self.chat.complete(build_messages(task, program, strategy, feedback, failed))
        try:
            source = extract_program(reply.text, reply.finish_reason)
        except CoderError as err:
            raise CoderError(str(err), usage=reply.usage()) from None
        self._last[task.name] = (key, source)
        steps = list(program.metadata.get(menus.STEPS_KEY, [])) if program else []
        return Program(source, {"coder": self.name, "usage": reply.usage(),
                                menus.MENU_KEY: menus.advance(self.menu, task, program, strategy),
                                menus.STEPS_KEY: steps + [str(strategy)]})

    def adopt(self, task: Task, strategy: Strategy, start: Program) -> Program:
        """`start`, another coder's result of `strategy` from no program (its port), as this coder's
        program: the menu follows from it, and a retry of the step shows the model that program."""
        self._last[task.name] = ((None, str(strategy)), start.source)
        return Program(start.source, {"coder": start.metadata.get("coder", "start"),
                                      menus.MENU_KEY: menus.advance(self.menu, task, None, strategy),
                                      menus.STEPS_KEY: [str(strategy)]})

    def legal_strategies(self, task: Task, program: Program | None) -> list[Strategy]:
        return menus.legal(self.menu, task, program)
