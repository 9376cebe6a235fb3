"""The coder behind any OpenAI-compatible chat endpoint: `vllm serve`, SGLang, Ollama, hosted APIs.

    mtmc optimize task=softmax_lastdim coder=openai coder.model=Qwen/Qwen2.5-Coder-32B-Instruct \\
        coder.base_url=http://127.0.0.1:8000/v1

One POST to `<base_url>/chat/completions` per attempt, through the standard library (no SDK: the
request is a dozen lines of JSON and the SDKs' own retries would hide what this one must count).
The API key comes from the environment variable named by `api_key_env`; a local server needs none.
Transient failures (connection errors, timeouts, HTTP 408/409/429/5xx) are retried with
exponential back-off, honouring `Retry-After`; anything else, or a failure past the retries, raises
ChatError. `max_concurrency` bounds the requests in flight from one coder across threads.
"""

from __future__ import annotations

import http.client
import json
import os
import random
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

from coders.llm import ChatError, LLMCoder, Message, Reply
from coders.llm.chat import plain_data

TRANSIENT_HTTP = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
ERROR_BODY_CHARS = 500


class _Transient(Exception):
    def __init__(self, message: str, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class OpenAIChat:
    def __init__(self, base_url: str, model: str, api_key_env: str | None = "OPENAI_API_KEY",
                 timeout_s: float = 600.0, max_retries: int = 4, backoff_s: float = 2.0,
                 max_backoff_s: float = 60.0, max_concurrency: int = 8, temperature: float | None = 0.2,
                 max_tokens: int | None = None, extra_body: Mapping[str, Any] | None = None) -> None:
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key_env = api_key_env
        self.api_key = os.environ.get(api_key_env) if api_key_env else None
        self.timeout_s = timeout_s  # per request: a non-streamed reply sends nothing until it is done
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.extra_body = plain_data(extra_body or {})  # merged into every request body
        self._slots = threading.BoundedSemaphore(max_concurrency)

    def complete(self, messages: list[Message]) -> Reply:
        body = json.dumps(self.request_body(messages)).encode()
        with self._slots:
            start = time.monotonic()  # the server's time, retries included; not the wait for a slot
            data, requests = self._post_with_retries(body)
            latency_s = time.monotonic() - start
        return self._reply(data, requests, latency_s)

    def request_body(self, messages: list[Message]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        return {**body, **self.extra_body}

    def _post_with_retries(self, body: bytes) -> tuple[dict[str, Any], int]:
        attempt = 0
        while True:
            try:
                return self._post(body), attempt + 1
            except _Transient as err:
                if attempt >= self.max_retries:
                    raise ChatError(f"{self.url}: no reply after {attempt + 1} attempts; "
                                    f"last: {err}") from None
                time.sleep(self._delay(attempt, err.retry_after_s))
                attempt += 1

    def _post(self, body: bytes) -> dict[str, Any]:
        request = urllib.request.Request(self.url, data=body, headers=self._headers(), method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                payload = response.read()
        except urllib.error.HTTPError as err:
            detail = err.read()[:ERROR_BODY_CHARS].decode(errors="replace")
            if err.code in TRANSIENT_HTTP:
                raise _Transient(f"HTTP {err.code}: {detail}", _retry_after(err.headers)) from None
            raise ChatError(f"{self.url}: HTTP {err.code}: {detail}{self._hint(err.code)}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError, http.client.HTTPException) as err:
            raise _Transient(f"{type(err).__name__}: {err}") from None
        try:
            return json.loads(payload)
        except json.JSONDecodeError:
            raise ChatError(f"{self.url}: the reply is not JSON: {payload[:ERROR_BODY_CHARS]!r}") from None

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return headers

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

    def _reply(self, data: dict[str, Any], requests: int, latency_s: float) -> Reply:
        choices = data.get("choices") or []
        if not choices:
            raise ChatError(f"{self.url}: the response has no choices: {json.dumps(data)[:ERROR_BODY_CHARS]}")
        message = choices[0].get("message") or {}
        usage = data.get("usage") or {}
        return Reply(text=message.get("content") or "", prompt_tokens=usage.get("prompt_tokens"),
                     completion_tokens=usage.get("completion_tokens"), latency_s=latency_s,
                     finish_reason=choices[0].get("finish_reason"), requests=requests)


def openai_coder(model: str, base_url: str = "http://127.0.0.1:8000/v1",
                 api_key_env: str | None = "OPENAI_API_KEY", timeout_s: float = 600.0, max_retries: int = 4,
                 backoff_s: float = 2.0, max_backoff_s: float = 60.0, max_concurrency: int = 8,
                 temperature: float | None = 0.2, max_tokens: int | None = None,
                 extra_body: Mapping[str, Any] | None = None, hybrid_start: bool = True) -> LLMCoder:
    chat = OpenAIChat(base_url, model, api_key_env=api_key_env, timeout_s=timeout_s, max_retries=max_retries,
                      backoff_s=backoff_s, max_backoff_s=max_backoff_s, max_concurrency=max_concurrency,
                      temperature=temperature, max_tokens=max_tokens, extra_body=extra_body)
    return LLMCoder(chat, name="openai", hybrid_start=hybrid_start)


def _retry_after(headers: Any) -> float | None:
    value = headers.get("Retry-After") if headers is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None  # an HTTP date: rare for APIs, and the back-off is a fine stand-in
