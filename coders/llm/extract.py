"""Find the program in an LLM's reply: the last fenced block that defines `ModelNew`, or the whole
reply when it is bare Python. Raises CoderError, with the reason, when there is none.

    source = extract_program(reply.text, finish_reason=reply.finish_reason)

Reasoning models often think aloud before answering (`<think>...</think>`), drafts included; the
thinking is dropped first so a draft is never taken for the answer. Among several blocks the last
one wins: replies put drafts and fragments before the final program far more often than after.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass

from mtmc.protocols import CoderError

PYTHON_TAGS = {"", "python", "py", "python3"}
DEFINES_MODEL_NEW = re.compile(r"^\s*class\s+ModelNew\b", re.M)
THINKING = re.compile(r"<think>.*?</think>", re.S)
CODE_START = re.compile(r"^(import|from)\s+\w", re.M)
QUOTE_CHARS = 200  # how much of a reply without code the error message quotes


@dataclass(frozen=True)
class Block:
    tag: str  # the fence's language tag, lower case ("" when none)
    code: str
    closed: bool  # False for a block the reply never closed (cut off, or a forgotten fence)


def extract_program(text: str, finish_reason: str | None = None) -> str:
    text = strip_thinking(text)
    if not text.strip():
        raise CoderError(_cut_off(finish_reason) or "the reply is empty")
    blocks = code_blocks(text)
    if not blocks:
        return _whole_file(text, finish_reason)
    programs = [b for b in blocks if b.tag in PYTHON_TAGS and DEFINES_MODEL_NEW.search(b.code)]
    closed = [b for b in programs if b.closed]
    if closed:
        return closed[-1].code
    if programs and finish_reason != "length":
        return programs[-1].code  # a forgotten closing fence; a cut-off program is no program
    reason = _cut_off(finish_reason)
    raise CoderError(reason or f"none of the reply's {len(blocks)} code block(s) defines `class ModelNew`")


def strip_thinking(text: str) -> str:
    text = THINKING.sub("", text)
    # chat templates that open <think> in the prompt leave only the closing tag in the reply
    return text.split("</think>", 1)[1] if "</think>" in text else text


def code_blocks(text: str) -> list[Block]:
    """Fenced blocks (```tag ... ```), in order; indented fences (inside list items) included."""
    blocks: list[Block] = []
    tag, lines, inside = "", [], False
    for line in text.splitlines():
        stripped = line.strip()
        if not inside and stripped.startswith("```"):
            tag, lines, inside = stripped[3:].strip().lower(), [], True
        elif inside and stripped.rstrip("`") == "" and stripped.startswith("```"):
            blocks.append(Block(tag, _code(lines), closed=True))
            inside = False
        elif inside:
            lines.append(line)
    if inside:
        blocks.append(Block(tag, _code(lines), closed=False))
    return blocks


def _whole_file(text: str, finish_reason: str | None) -> str:
    """A reply with no fences is a program if it parses, possibly after a line of prose before it."""
    if DEFINES_MODEL_NEW.search(text):
        start = CODE_START.search(text)
        for candidate in (text, text[start.start():] if start else None):
            if candidate is not None and _parses(candidate):
                return candidate.strip() + "\n"
    reason = _cut_off(finish_reason)
    raise CoderError(reason or "no program in the reply: expected one ```python block defining "
                     f"`class ModelNew`; the reply starts: {text.strip()[:QUOTE_CHARS]!r}")


def _code(lines: list[str]) -> str:
    return textwrap.dedent("\n".join(lines)).strip("\n") + "\n"


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except SyntaxError:
        return False
    return True


def _cut_off(finish_reason: str | None) -> str | None:
    if finish_reason == "length":
        return "the reply was cut off at the token limit before the program was complete (raise max_tokens)"
    return None
