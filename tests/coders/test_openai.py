"""The openai coder against a real OpenAI-compatible HTTP server on loopback, answering from a script
(tests/coders/chat_server.py): replies, prose, no code, timeouts, HTTP errors, retries with the
verifier's feedback, the concurrency limit, and `mtmc optimize coder=openai` end to end.

    pytest tests/coders/test_openai.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from coders.llm import ChatError
from coders.openai import OpenAIChat, openai_coder
from coders.template import TemplateCoder
from coders.template.menu import TemplateMenu
from mtmc.budgets import Budgets
from mtmc.graph import Context, build_graph, initial_state, run_config
from mtmc.optimize import RunStopped, run_optimize
from mtmc.protocols import CoderError
from mtmc.strategies import PORT
from mtmc.verify import InterpreterVerifier
from tests.coders.chat_server import ScriptedChatServer, reply, words
from tests.graph.fakes import TASK_SOURCE, tiny_task
from tests.scripted_planner import ScriptedPlanner

# A correct Triton port of tests/graph/fakes.py's task (relu(x) * 2); WRONG scales by 3 instead.
GOOD = '''import torch
import triton
import triton.language as tl


@triton.jit
def _relu_scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.maximum(x, 0.0) * 2.0, mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        _relu_scale[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
'''
WRONG = GOOD.replace("* 2.0", "* 3.0")
FAST = {"backoff_s": 0.01, "max_backoff_s": 0.05}  # retries without waiting


def fenced(code: str) -> str:
    return f"```python\n{code}```"


def coder_for(server: ScriptedChatServer, **kwargs):
    """The template's menu, as conf/coder/openai.yaml has it; its port first with `hybrid_start=True`."""
    start = TemplateCoder() if kwargs.pop("hybrid_start", False) else None
    return openai_coder(model="scripted", base_url=server.url, start=start, menu=TemplateMenu(),
                        **{**FAST, **kwargs})


def port(server: ScriptedChatServer, **kwargs):
    return coder_for(server, **kwargs).apply(tiny_task(), None, PORT)


@pytest.fixture(scope="module")
def verifier():
    with InterpreterVerifier(seeds=2) as v:
        yield v


# ---------------------------------------------------------------------------------------------------
# one request


def test_a_good_reply_is_the_program_with_its_token_counts(monkeypatch):
    monkeypatch.setenv("MTMC_TEST_KEY", "sk-test")
    with ScriptedChatServer([reply(fenced(GOOD))]) as server:
        program = port(server, api_key_env="MTMC_TEST_KEY", temperature=0.1, max_tokens=2048,
                       extra_body={"seed": 7})
    assert program.source == GOOD
    (request,) = server.requests
    body = request["body"]
    assert request["headers"]["authorization"] == "Bearer sk-test"
    assert body["model"] == "scripted" and body["temperature"] == 0.1 and body["max_tokens"] == 2048
    assert body["seed"] == 7 and [m["role"] for m in body["messages"]] == ["system", "user"]
    assert TASK_SOURCE.strip() in body["messages"][1]["content"]
    usage = program.metadata["usage"]
    assert usage["prompt_tokens"] == sum(words(m["content"]) for m in body["messages"])
    assert usage["completion_tokens"] == words(fenced(GOOD)) and usage["requests"] == 1
    assert usage["latency_s"] >= 0


def test_no_api_key_in_the_environment_sends_the_placeholder_key(monkeypatch):
    # the openai client refuses to run without a key; local servers ignore it (vLLM's docs send EMPTY)
    monkeypatch.delenv("MTMC_TEST_KEY", raising=False)
    with ScriptedChatServer([reply(fenced(GOOD))]) as server:
        port(server, api_key_env="MTMC_TEST_KEY")
    assert server.requests[0]["headers"]["authorization"] == "Bearer EMPTY"


def test_prose_around_the_code_is_dropped():
    text = f"The port below uses one kernel.\n\n{fenced(GOOD)}\n\nIt masks the tail, so any size works."
    with ScriptedChatServer([reply(text)]) as server:
        assert port(server).source == GOOD


def test_a_reply_with_no_code_is_a_coder_error_that_still_counts_its_tokens():
    with ScriptedChatServer([reply("Sorry, I can't write Triton code for this.")]) as server:
        with pytest.raises(CoderError, match="no program in the reply") as err:
            port(server)
    assert err.value.usage["completion_tokens"] == 8 and err.value.usage["prompt_tokens"] > 0


def test_a_timeout_is_retried():
    with ScriptedChatServer([reply(fenced(GOOD), delay_s=2.0), reply(fenced(GOOD))]) as server:
        program = port(server, timeout_s=0.3)
    assert program.source == GOOD and program.metadata["usage"]["requests"] == 2


def test_timeouts_past_the_retries_stop_with_a_chat_error():
    with ScriptedChatServer([reply(fenced(GOOD), delay_s=2.0)] * 3) as server:
        with pytest.raises(ChatError, match=r"no reply after 3 attempts.*timed out"):
            port(server, timeout_s=0.2, max_retries=2)
    assert len(server.requests) == 3


def test_a_500_then_success():
    with ScriptedChatServer([{"status": 500}, reply(fenced(GOOD))]) as server:
        program = port(server)
    assert program.source == GOOD and len(server.requests) == 2
    assert program.metadata["usage"]["requests"] == 2


def test_429_waits_as_long_as_retry_after_says():
    chat_kwargs = {"backoff_s": 10.0, "max_backoff_s": 60.0}  # without Retry-After: 5 to 10 s
    with ScriptedChatServer([{"status": 429, "retry_after": 0}, reply(fenced(GOOD))]) as server:
        chat = OpenAIChat(server.url, "scripted", **chat_kwargs)
        answer = chat.complete([{"role": "user", "content": "hi"}])
    assert answer.requests == 2 and answer.latency_s < 4


def test_client_errors_are_not_retried_and_say_what_to_check(monkeypatch):
    monkeypatch.setenv("MTMC_TEST_KEY", "wrong")
    with ScriptedChatServer([{"status": 401, "error": "invalid api key"}, reply(fenced(GOOD))]) as server:
        with pytest.raises(ChatError, match=r"HTTP 401.*invalid api key.*\$MTMC_TEST_KEY"):
            port(server, api_key_env="MTMC_TEST_KEY")
    assert len(server.requests) == 1


def test_an_unknown_model_fails_at_once_and_says_what_to_check():
    with ScriptedChatServer([{"status": 404, "error": "model not found"}, reply(fenced(GOOD))]) as server:
        with pytest.raises(ChatError, match=r"HTTP 404.*model not found.*coder.model"):
            port(server)
    assert len(server.requests) == 1


def test_a_malformed_url_fails_at_once_without_retries():
    chat = OpenAIChat("htp://127.0.0.1:1/v1", "scripted", max_retries=3, backoff_s=10.0)
    start = time.monotonic()
    with pytest.raises(ChatError, match="cannot connect.*coder.base_url"):
        chat.complete([{"role": "user", "content": "hi"}])
    assert time.monotonic() - start < 5  # no back-off was slept


def test_a_dead_server_is_a_chat_error_not_a_verdict():
    with ScriptedChatServer([]) as server:
        url = server.url
    with pytest.raises(ChatError, match="no reply after 2 attempts"):
        OpenAIChat(url, "scripted", max_retries=1, **FAST).complete([{"role": "user", "content": "hi"}])


def test_the_concurrency_limit_holds_across_threads():
    with ScriptedChatServer([reply(fenced(GOOD), delay_s=0.2)] * 6) as server:
        chat = OpenAIChat(server.url, "scripted", max_concurrency=2)
        threads = [threading.Thread(target=chat.complete, args=([{"role": "user", "content": "hi"}],))
                   for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len(server.requests) == 6 and server.max_in_flight == 2


# ---------------------------------------------------------------------------------------------------
# through the loop, with the real verifier


def test_a_rejected_reply_is_retried_with_the_verdict_and_the_fix_accepted(tmp_path, verifier):
    with ScriptedChatServer([reply(fenced(WRONG)), reply(f"Fixed the scale:\n{fenced(GOOD)}")]) as server:
        result = run_optimize(tiny_task(), ScriptedPlanner(["port"]), coder_for(server), verifier, tmp_path,
                              budgets=Budgets(max_steps=2, max_retries=1, time_limit_s=None))
    attempts = [(r["attempt"], r["status"], r["outcome"]) for r in result.trajectory]
    assert attempts == [(0, "incorrect", "retry"), (1, "ok", "accepted")]
    retry_prompt = server.user_prompts()[1]
    assert "**incorrect**" in retry_prompt and "max |out - ref|" in retry_prompt
    assert WRONG.strip() in retry_prompt  # the failed attempt, so the model can see what to fix
    assert (tmp_path / "kernel.py").read_text() == GOOD
    total = json.loads((tmp_path / "result.json").read_text())["usage"]
    assert total["requests"] == 2
    assert total["prompt_tokens"] == sum(r["usage"]["prompt_tokens"] for r in result.trajectory) > 0


def test_an_unreachable_server_stops_the_run_and_resume_continues_it(tmp_path, verifier):
    """An outage is not the step's fault: no verdict, no reward; the run stops and resumes later."""
    def optimize(server, **kwargs):
        coder = coder_for(server, max_retries=1)
        return run_optimize(tiny_task(), ScriptedPlanner(["port"]), coder, verifier, tmp_path,
                            budgets=Budgets(max_steps=1, max_retries=1, time_limit_s=None), **kwargs)

    with ScriptedChatServer([{"status": 503}] * 2) as server:
        with pytest.raises(RunStopped, match="HTTP 503: .*stopped at step 0") as stopped:
            optimize(server)
    assert isinstance(stopped.value.__cause__, ChatError) and not stopped.value.interrupted
    assert (tmp_path / "trajectory.jsonl").read_text() == ""  # nothing recorded against the step
    with ScriptedChatServer([reply(fenced(GOOD))]) as server:
        result = optimize(server, resume=True)
    assert [(r["status"], r["outcome"]) for r in result.trajectory] == [("ok", "accepted")]
    assert (tmp_path / "kernel.py").read_text() == GOOD


def test_junk_from_the_model_is_rejected_and_the_template_port_kept(verifier):
    """Hybrid start: the template's port is verified and accepted; the model's step gives no program
    twice, so the step is rejected and the port stays the program."""
    task = tiny_task()
    script = [reply("Vectorizing is not worth it here."), reply("Still no code, sorry.")]
    with ScriptedChatServer(script) as server:
        coder = coder_for(server, hybrid_start=True)
        context = Context(task=task, planner=ScriptedPlanner(["port", "vectorize"]), coder=coder,
                          verifier=verifier, budgets=Budgets(max_steps=3, max_retries=1))
        state = build_graph().compile(checkpointer=InMemorySaver()).invoke(
            initial_state(), run_config("t", Budgets(max_steps=3, max_retries=1)), context=context)
    steps = [(r["strategy"], r["status"], r["outcome"]) for r in state["trajectory"]]
    assert steps == [("port", "ok", "accepted"), ("vectorize", "compile_error", "retry"),
                     ("vectorize", "compile_error", "rejected")]
    assert state["program"]["metadata"]["coder"] == "template"
    assert state["trajectory"][0]["usage"] is None  # the hybrid port cost no tokens
    assert [r["usage"]["completion_tokens"] for r in state["trajectory"][1:]] == [6, 4]
    assert "no program in the reply" in state["trajectory"][1]["message"]


def test_mtmc_optimize_with_coder_openai(tmp_path):
    task_file = tmp_path / "relu_scale.py"
    task_file.write_text(TASK_SOURCE)
    run_dir = tmp_path / "run"
    with ScriptedChatServer([reply(fenced(GOOD))]) as server:
        result = subprocess.run(
            [sys.executable, "-m", "mtmc.cli", "optimize", f"task={task_file}", "coder=openai",
             f"coder.base_url={server.url}", "coder.model=scripted", "coder.hybrid_start=false",
             "verifier=interpreter", "max_steps=1", f"hydra.run.dir={run_dir}"],
            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (run_dir / "kernel.py").read_text() == GOOD
    (step,) = [json.loads(line) for line in (run_dir / "trajectory.jsonl").read_text().splitlines()]
    assert step["status"] == "ok" and step["usage"]["completion_tokens"] == words(fenced(GOOD))
    assert len(server.requests) == 1
