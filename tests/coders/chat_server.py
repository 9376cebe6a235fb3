"""A real OpenAI-compatible HTTP server on loopback that answers /v1/chat/completions from a script.

    with ScriptedChatServer([reply("```python\\n...```"), {"status": 500}, ...]) as server:
        coder = openai_coder(model="scripted", base_url=server.url)

Each request takes the next entry: {"content": text, "finish_reason": "stop", "delay_s": 0.0} answers
200 after the delay; {"status": 500} answers that HTTP status (with "retry_after" as a header). A
request past the end of the script gets HTTP 400, so a test that sends too many fails loudly. Usage
counts whitespace-separated words: prompt words over all messages, completion words in the reply.
"""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def reply(content: str, **extra: Any) -> dict[str, Any]:
    return {"content": content, **extra}


def words(text: str) -> int:
    return len(text.split())


class ScriptedChatServer:
    def __init__(self, script: list[dict[str, Any]]) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []  # {"body", "headers" (lower-case names)} per request
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._http.handle_error = _quiet_on_hangup(self._http.handle_error)
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_address[1]}/v1"

    def __enter__(self) -> ScriptedChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()
        self._http.shutdown()
        self._http.server_close()

    def user_prompts(self) -> list[str]:
        return [r["body"]["messages"][-1]["content"] for r in self.requests]

    def answer(self, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict, dict[str, str]]:
        with self._lock:
            self.requests.append({"body": body, "headers": headers})
            entry = self.script.pop(0) if self.script else {"status": 400, "error": "the script is exhausted"}
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            self._closing.wait(entry.get("delay_s", 0.0))
            if "status" in entry:
                extra = {"Retry-After": str(entry["retry_after"])} if "retry_after" in entry else {}
                return entry["status"], {"error": {"message": entry.get("error", "scripted failure")}}, extra
            return 200, _completion(body, entry), {}
        finally:
            with self._lock:
                self.in_flight -= 1


def _completion(body: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    prompt = sum(words(m["content"]) for m in body["messages"])
    completion = words(entry["content"])
    return {
        "id": "chatcmpl-scripted", "object": "chat.completion", "created": 0, "model": body["model"],
        "choices": [{"index": 0, "message": {"role": "assistant", "content": entry["content"]},
                     "finish_reason": entry.get("finish_reason", "stop")}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion},
    }


def _handler(server: ScriptedChatServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            if self.path != "/v1/chat/completions":
                return self._send(404, {"error": {"message": f"no route {self.path}"}}, {})
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            self._send(*server.answer(body, {k.lower(): v for k, v in self.headers.items()}))

        def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            for key, value in {"Content-Type": "application/json", **headers}.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


def _quiet_on_hangup(handle_error):
    """A client that timed out has hung up before the delayed answer: expected, not worth a traceback."""
    def handle(request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):
            handle_error(request, client_address)
    return handle
