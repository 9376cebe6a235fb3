"""LLMCoder: the Coder protocol on top of any `Chat` backend (OpenAI-compatible HTTP, vLLM, HF).

One step is one conversation: the reference, the current program, the step's instruction and, on a
retry, the verifier's verdict with the failed attempt. The reply's program goes back to the loop
untouched; the verifier, not the coder, decides whether it is any good.

With `hybrid_start` the first step comes from the template coder where it supports the task (a
verified-correct start for free); the LLM takes over from the second step, and from the first one
where the template cannot port the task or its port failed verification.
"""

from __future__ import annotations

from coders.llm import menu
from coders.llm.chat import Chat
from coders.llm.extract import extract_program
from coders.llm.prompt import build_messages
from mtmc.program import Program
from mtmc.protocols import CoderError
from mtmc.strategies import Strategy
from mtmc.tasks import Task
from mtmc.verify.verdict import Verdict

AttemptKey = tuple[str | None, str]  # (current program's digest, strategy text)


class LLMCoder:
    def __init__(self, chat: Chat, name: str = "llm", hybrid_start: bool = True) -> None:
        self.chat = chat
        self.name = name
        self.hybrid_start = hybrid_start
        # task name -> the last attempt's key and source: a retry shows the model what failed. Lost on
        # resume, which only means one retry prompt without the failed code.
        self._last: dict[str, tuple[AttemptKey, str]] = {}

    def apply(self, task: Task, program: Program | None, strategy: Strategy,
              feedback: Verdict | None = None) -> Program:
        if strategy.is_stop:
            raise CoderError("`stop` is never applied: the current program is kept")
        key = (program.digest if program else None, str(strategy))
        if strategy.kind == "port" and self.hybrid_start and feedback is None:
            start = menu.template_port(task)
            if start is not None:
                self._last[task.name] = (key, start.source)
                return Program(start.source, {"coder": "template", menu.MENU_KEY: start.metadata,
                                              menu.STEPS_KEY: ["port"]})
        previous = self._last.get(task.name)
        failed = previous[1] if feedback is not None and previous and previous[0] == key else None
        reply = self.chat.complete(build_messages(task, program, strategy, feedback, failed))
        try:
            source = extract_program(reply.text, reply.finish_reason)
        except CoderError as err:
            raise CoderError(str(err), usage=reply.usage()) from None
        self._last[task.name] = (key, source)
        steps = list(program.metadata.get(menu.STEPS_KEY, [])) if program else []
        return Program(source, {"coder": self.name, "usage": reply.usage(),
                                menu.MENU_KEY: menu.advance(task, program, strategy),
                                menu.STEPS_KEY: steps + [str(strategy)]})

    def legal_strategies(self, task: Task, program: Program | None) -> list[Strategy]:
        return menu.legal(task, program)
