"""The one call an LLM coder makes: a chat conversation in, one reply out, with what it cost.

Backends (coders/openai.py, coders/vllm.py, coders/hf.py) implement `Chat`; `LLMCoder` does the
rest. A backend raises `ChatError` when the model cannot be reached or refuses the request.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from mtmc.protocols import RoleUnavailable

Message = dict[str, str]  # {"role": "system" | "user" | "assistant", "content": ...}


class ChatError(RoleUnavailable):
    """The model could not answer (server down, timeouts past the retries, HTTP 4xx, ...).

    Deliberately not a CoderError: a CoderError becomes a failing verdict and a negative reward for
    the planner's step, but an outage says nothing about the step. It stops the run instead, and
    `resume=<run folder>` continues from the last finished node once the server is back.
    """


@dataclass(frozen=True)
class Reply:
    text: str
    prompt_tokens: int | None = None  # as the backend counted them; None when it did not say
    completion_tokens: int | None = None
    latency_s: float = 0.0  # wall clock of the model's answer, retries and back-off included
    finish_reason: str | None = None  # "stop", "length" (cut off at the token limit), ...
    requests: int = 1  # attempts it took (HTTP retries)

    def usage(self) -> dict[str, int | float]:
        """The trajectory's per-attempt `usage` record (summed over a run by mtmc/report.py)."""
        usage: dict[str, int | float] = {"requests": self.requests, "latency_s": round(self.latency_s, 3)}
        if self.prompt_tokens is not None:
            usage["prompt_tokens"] = self.prompt_tokens
        if self.completion_tokens is not None:
            usage["completion_tokens"] = self.completion_tokens
        return usage


@runtime_checkable
class Chat(Protocol):
    def complete(self, messages: list[Message]) -> Reply: ...


def plain_data(value: Any) -> Any:
    """Plain dicts and lists (Hydra hands nested options over as DictConfig/ListConfig), so request
    bodies serialize and chat templates see ordinary Python values."""
    if isinstance(value, Mapping):
        return {str(k): plain_data(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [plain_data(v) for v in value]
    return value
