"""The vllm coder without vLLM: the clear error when it is missing, and the adapter's use of the
`vllm.LLM` API (constructor arguments, `chat`, RequestOutput fields) against a stand-in module with
that API's shape. A real engine runs only where vLLM installs (see the `live` tier and README).

    pytest tests/coders/test_vllm.py
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field

import pytest

from coders.vllm import vllm_coder
from mtmc.strategies import PORT
from tests.coders.test_openai import GOOD
from tests.graph.fakes import tiny_task


def test_a_missing_vllm_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # makes `import vllm` fail even where it is installed
    with pytest.raises(ImportError, match=r"pip install 'mtmc\[vllm\]'.*coder=openai"):
        vllm_coder(model="any/model")


@dataclass
class Completion:  # vllm.outputs.CompletionOutput, the fields the adapter reads
    text: str
    token_ids: list[int]
    finish_reason: str


@dataclass
class RequestOutput:  # vllm.outputs.RequestOutput
    prompt_token_ids: list[int]
    outputs: list[Completion]


@dataclass
class FakeLLM:
    kwargs: dict
    calls: list = field(default_factory=list)
    reply: str = ""

    def chat(self, messages, sampling_params=None, use_tqdm=True, chat_template_kwargs=None):
        self.calls.append({"messages": messages, "params": sampling_params, "use_tqdm": use_tqdm,
                           "chat_template_kwargs": chat_template_kwargs})
        return [RequestOutput(prompt_token_ids=list(range(321)),
                              outputs=[Completion(self.reply, list(range(45)), "stop")])]


@pytest.fixture
def fake_vllm(monkeypatch):
    module = types.ModuleType("vllm")
    module.engines = []

    def make_llm(**kwargs):
        module.engines.append(FakeLLM(kwargs, reply=f"```python\n{GOOD}```"))
        return module.engines[-1]

    module.LLM = make_llm
    module.SamplingParams = lambda **kwargs: kwargs
    monkeypatch.setitem(sys.modules, "vllm", module)
    return module


def test_the_engine_gets_the_parallelism_and_the_sampling_settings(fake_vllm):
    vllm_coder(model="org/coder-32b", tensor_parallel_size=4, max_model_len=16384, temperature=0.6,
               max_tokens=4096, chat_template_kwargs={"enable_thinking": False})
    (engine,) = fake_vllm.engines
    assert engine.kwargs["model"] == "org/coder-32b" and engine.kwargs["tensor_parallel_size"] == 4
    assert engine.kwargs["max_model_len"] == 16384


def test_a_step_is_one_chat_call_and_its_tokens_are_counted(fake_vllm):
    coder = vllm_coder(model="org/coder", temperature=0.6, max_tokens=4096,
                       chat_template_kwargs={"enable_thinking": False}, hybrid_start=False)
    program = coder.apply(tiny_task(), None, PORT)
    (call,) = fake_vllm.engines[0].calls
    (conversation,) = call["messages"]  # a batch of one conversation
    assert [m["role"] for m in conversation] == ["system", "user"] and not call["use_tqdm"]
    assert call["params"] == {"temperature": 0.6, "top_p": 0.95, "max_tokens": 4096}
    assert call["chat_template_kwargs"] == {"enable_thinking": False}
    assert program.source == GOOD
    usage = program.metadata["usage"]
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (321, 45)
