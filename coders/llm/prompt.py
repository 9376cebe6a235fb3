"""The conversation an LLM coder sends: a system prompt with the program contract, then one user
message with the reference, the current program, the one step to apply and, on a retry, the
verifier's feedback with the failed attempt.

    messages = build_messages(task, program, Strategy.parse("tile BLOCK=1024"), feedback, previous)

All text lives in coders/prompts/*.md (`string.Template`, `$name` placeholders: Python code is
full of braces): system.md, user.md, feedback.md and one file per strategy kind, so a prompt can be
reworded without touching code. A missing placeholder value raises instead of leaving `$x` behind.
"""

from __future__ import annotations

import functools
from pathlib import Path
from string import Template

from coders.llm.chat import Message
from mtmc.program import Program
from mtmc.strategies import KINDS, Strategy
from mtmc.tasks import Task
from mtmc.verify.policy import ALLOWED_IMPORTS, allowed_api
from mtmc.verify.verdict import Verdict

PROMPTS = Path(__file__).resolve().parents[1] / "prompts"
STEP_KINDS = tuple(kind for kind in KINDS if kind != "stop")  # each has coders/prompts/<kind>.md
MESSAGE_CHARS = 4000  # of a verifier message: tracebacks put the cause at the end, so head + tail


def build_messages(task: Task, program: Program | None, strategy: Strategy,
                   feedback: Verdict | None = None, previous: str | None = None) -> list[Message]:
    """`previous` is the failed attempt's source, shown with `feedback` on a retry."""
    return [{"role": "system", "content": system_prompt()},
            {"role": "user", "content": user_prompt(task, program, strategy, feedback, previous)}]


def system_prompt() -> str:
    imports = ", ".join(f"`{name}`" for name in sorted(ALLOWED_IMPORTS - {"__future__"}))
    return render("system", imports=imports)


def user_prompt(task: Task, program: Program | None, strategy: Strategy, feedback: Verdict | None = None,
                previous: str | None = None) -> str:
    return render(
        "user",
        reference=task.source.strip(),
        library=_library(task),
        program=render("program", source=program.source.strip()) if program else render("no_program"),
        step=step_prompt(strategy),
        feedback=feedback_prompt(feedback, previous) if feedback is not None else "",
    )


def step_prompt(strategy: Strategy) -> str:
    if strategy.kind not in STEP_KINDS:
        raise ValueError(f"`{strategy}` is not a step a coder applies")
    value = "" if strategy.value is None else str(strategy.value)
    return render(strategy.kind, step=str(strategy), instruction=strategy.instruction(), value=value)


def feedback_prompt(verdict: Verdict, previous: str | None) -> str:
    metrics = [f"- {label}: {value:.3g}" for label, value in (
        ("max |out - ref|", verdict.max_abs_error), ("||out - ref|| / ||ref||", verdict.rel_error))
        if value is not None]
    metrics += [f"- flag: {flag}" for flag in verdict.flags]
    return render(
        "feedback",
        status=str(verdict.status),
        message=clip(verdict.message.strip() or "(no message)"),
        metrics="\n".join(metrics) or "- (no error metrics: the program did not get as far as a comparison)",
        previous=render("previous", source=previous.strip()) if previous else "",
    )


def clip(text: str, limit: int = MESSAGE_CHARS) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit} characters cut ...]\n{text[-half:]}"


def render(name: str, **values: str) -> str:
    return Template(_template(name)).substitute(values).strip() + "\n"


@functools.cache
def _template(name: str) -> str:
    path = PROMPTS / f"{name}.md"
    if not path.is_file():
        raise FileNotFoundError(f"no prompt template {path}")
    return path.read_text()


def _library(task: Task) -> str:
    if not task.library_ops:
        return ""
    ops = ", ".join(f"`{op}`" for op in task.library_ops)
    api = ", ".join(f"`{name}`" for name in sorted(allowed_api(task.library_ops)))
    return (f"This task allows a vendor-library call for {ops} to stay in PyTorch ({api}); everything "
            "around it must run in Triton.\n")
