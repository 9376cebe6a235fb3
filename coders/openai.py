"""The coder behind any OpenAI-compatible chat endpoint: `vllm serve`, SGLang, Ollama, hosted APIs.

    pip install -e ".[openai]"
    mtmc optimize task=softmax_lastdim coder=openai coder.model=Qwen/Qwen2.5-Coder-32B-Instruct \\
        coder.base_url=http://127.0.0.1:8000/v1

Requests go through the `openai` client package, the one users of these servers already have. Its
own retries are off: this module retries, so that every request is counted (`Reply.requests`) and a
permanent failure ends at once. Transient failures (timeouts, a refused or dropped connection, HTTP
408/409/425/429/5xx) are retried with exponential back-off, honouring `Retry-After`; permanent ones
(an unknown host, a malformed URL, any other HTTP status: a wrong key, an unknown model) raise
ChatError on the first try with a hint of what to check, as does a failure past the retries. The API
key comes from the environment variable named by `api_key_env`; a local server needs none (the
client then sends the placeholder key `EMPTY`, as vLLM's docs do). `max_concurrency` bounds the
requests in flight from one coder across threads.
"""

from __future__ import annotations

import os
import random
import socket
import threading
import time
from collections.abc import Mapping
from typing import Any

from coders.llm import ChatError, LLMCoder, Message, Reply
from coders.llm.chat import plain_data
from coders.llm.hybrid import llm_coder
from mtmc.protocols import Coder, Menu

TRANSIENT_HTTP = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
ERROR_BODY_CHARS = 500
NO_KEY = "EMPTY"  # what local servers are sent when no key is configured (the client requires one)


class _Transient(Exception):
    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class OpenAIChat:
    def __init__(self, base_url: str, model: str, api_key_env: str | None = "OPENAI_API_KEY",
                 timeout_s: float = 600.0, max_retries: int = 4, backoff_s: float = 2.0,
                 max_backoff_s: float = 60.0, max_concurrency: int = 8, temperature: float | None = 0.2,
                 max_tokens: int | None = None, extra_body: Mapping[str, Any] | None = None) -> None:
        try:
            import openai
        except ImportError:
            raise ChatError("coder=openai needs the openai client: pip install -e \".[openai]\"") from None
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key_env = api_key_env
        self.api_key = os.environ.get(api_key_env) if api_key_env else None
        # per request: a non-streamed reply sends nothing until it is done
        self.client = openai.OpenAI(base_url=base_url, api_key=self.api_key or NO_KEY, timeout=timeout_s,
                                    max_retries=0)
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.extra_body = plain_data(extra_body or {})  # merged into every request body
        self._slots = threading.BoundedSemaphore(max_concurrency)

    def complete(self, messages: list[Message]) -> Reply:
        with self._slots:
            start = time.monotonic()  # the server's time, retries included; not the wait for a slot
            response, requests = self._create_with_retries(messages)
            latency_s = time.monotonic() - start
        return self._reply(response, requests, latency_s)

    def request_options(self) -> dict[str, Any]:
        options: dict[str, Any] = {"model": self.model}
        if self.temperature is not None:
            options["temperature"] = self.temperature
        if self.max_tokens is not None:
            options["max_tokens"] = self.max_tokens
        return {**options, "extra_body": self.extra_body or None}

    def _create_with_retries(self, messages: list[Message]) -> tuple[Any, int]:
        attempt = 0
        while True:
            try:
                return self._create(messages), attempt + 1
            except _Transient as err:
                if attempt >= self.max_retries:
                    raise ChatError(f"{self.url}: no reply after {attempt + 1} attempts; "
                                    f"last: {err}") from None
                time.sleep(self._delay(attempt, err.retry_after_s))
                attempt += 1

    def _create(self, messages: list[Message]) -> Any:
        import openai

        try:
            return self.client.chat.completions.create(messages=messages, **self.request_options())
        except openai.APITimeoutError:
            raise _Transient("the request timed out") from None
        except openai.APIConnectionError as err:
            cause = _root_cause(err)
            if _permanent_connection_error(cause):
                raise ChatError(f"{self.url}: cannot connect: {cause} (check coder.base_url)") from None
            raise _Transient(f"{type(cause).__name__}: {cause}") from None
        except openai.APIStatusError as err:
            detail = err.response.text[:ERROR_BODY_CHARS]
            if err.status_code in TRANSIENT_HTTP:
                raise _Transient(f"HTTP {err.status_code}: {detail}",
                                 _retry_after(err.response.headers)) from None
            raise ChatError(f"{self.url}: HTTP {err.status_code}: {detail}{self._hint(err.status_code)}") \
                from None

    def _hint(self, code: int) -> str:
        if code in (401, 403):
            return f" (the API key is read from ${self.api_key_env})" if self.api_key_env else \
                " (no API key is sent: set coder.api_key_env to the variable that holds it)"
        if code == 404:
            return " (check coder.base_url, which usually ends in /v1, and coder.model)"
        return ""

    def _delay(self, attempt: int, retry_after_s: float | None) -> float:
        if retry_after_s is not None:
            return min(retry_after_s, self.max_backoff_s)
        # jittered: many workers retrying one overloaded server should not retry in lockstep
        return random.uniform(0.5, 1.0) * min(self.backoff_s * 2**attempt, self.max_backoff_s)

    def _reply(self, response: Any, requests: int, latency_s: float) -> Reply:
        choices = response.choices or []
        if not choices:
            raise ChatError(f"{self.url}: the response has no choices: {str(response)[:ERROR_BODY_CHARS]}")
        usage = response.usage
        return Reply(text=choices[0].message.content or "",
                     prompt_tokens=usage.prompt_tokens if usage else None,
                     completion_tokens=usage.completion_tokens if usage else None, latency_s=latency_s,
                     finish_reason=choices[0].finish_reason, requests=requests)


def openai_coder(model: str, base_url: str = "http://127.0.0.1:8000/v1",
                 api_key_env: str | None = "OPENAI_API_KEY", timeout_s: float = 600.0, max_retries: int = 4,
                 backoff_s: float = 2.0, max_backoff_s: float = 60.0, max_concurrency: int = 8,
                 temperature: float | None = 0.2, max_tokens: int | None = None,
                 extra_body: Mapping[str, Any] | None = None, hybrid_start: bool = True,
                 start: Coder | None = None, menu: Menu | None = None) -> Coder:
    chat = OpenAIChat(base_url, model, api_key_env=api_key_env, timeout_s=timeout_s, max_retries=max_retries,
                      backoff_s=backoff_s, max_backoff_s=max_backoff_s, max_concurrency=max_concurrency,
                      temperature=temperature, max_tokens=max_tokens, extra_body=extra_body)
    return llm_coder(LLMCoder(chat, name="openai", menu=menu), start, hybrid_start)


def _root_cause(err: BaseException) -> BaseException:
    while err.__cause__ is not None or err.__context__ is not None:
        err = err.__cause__ or err.__context__
    return err


def _permanent_connection_error(cause: BaseException) -> bool:
    """An unknown host or a malformed URL will not heal with a retry; a refused connection may (a
    server still starting)."""
    return isinstance(cause, socket.gaierror) or "UnsupportedProtocol" in type(cause).__name__ or \
        "InvalidURL" in type(cause).__name__


def _retry_after(headers: Any) -> float | None:
    value = headers.get("Retry-After") if headers is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date: rare for APIs, and the back-off is a fine stand-in
