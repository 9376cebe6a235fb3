"""LLMCoder (coders/llm/llm_coder.py) on a scripted Chat, alone and composed with the template coder's
port (HybridCoder, coders/llm/hybrid.py): hybrid start, the menu it offers the planner (the template's
TemplateMenu, coders/template/menu.py), retry prompts, usage on failure. The HTTP, vLLM and
transformers backends have their own tests.

    pytest tests/coders/test_llm.py
"""

from __future__ import annotations

import pytest

from coders.llm import LLMCoder, Reply
from coders.llm.hybrid import HybridCoder
from coders.llm.menu import MENU_KEY, generic_menu
from coders.template import TemplateCoder
from coders.template.menu import TemplateMenu
from mtmc.protocols import Coder, CoderError, Menu
from mtmc.strategies import PORT, STOP, Strategy
from mtmc.tasks import Task
from mtmc.verify.verdict import Status, Verdict
from tests.coders.test_prompt import PROGRAM
from tests.graph.fakes import tiny_task

SORT = Task(name="sort_rows", source='''
import torch

class Model(torch.nn.Module):
    def forward(self, x):
        return torch.sort(x, dim=1).values

def get_inputs():
    return [torch.randn(16, 128)]

def get_init_inputs():
    return []
''')


class ScriptedChat:
    """Answers from a list of reply texts and keeps every conversation it was sent."""

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.sent: list[list[dict[str, str]]] = []

    def complete(self, messages):
        self.sent.append(messages)
        return Reply(self.texts.pop(0), prompt_tokens=100, completion_tokens=50, latency_s=0.5)

    def prompt(self, i: int) -> str:
        return self.sent[i][-1]["content"]


def fenced(code: str) -> str:
    return f"Here it is:\n```python\n{code}```\n"


def variant(tag: str) -> str:
    return PROGRAM.replace("return x", f"return x  # {tag}")


@pytest.fixture(scope="module")
def template_port():
    task = tiny_task()
    return task, TemplateCoder().apply(task, None, PORT)


def hybrid(chat: ScriptedChat) -> HybridCoder:
    """What conf/coder/openai.yaml builds: the template's port first, its menu throughout."""
    return HybridCoder(TemplateCoder(), LLMCoder(chat, menu=TemplateMenu()))


def test_llm_coder_is_a_coder_and_the_template_menu_a_menu():
    assert isinstance(LLMCoder(ScriptedChat()), Coder) and isinstance(hybrid(ScriptedChat()), Coder)
    assert isinstance(TemplateMenu(), Menu)


def test_the_llm_coders_do_not_import_the_template_coder():
    """They take a Menu and a start coder from the config (conf/coder/*.yaml) instead."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "coders"
    sources = [*root.joinpath("llm").glob("*.py"), *(root / f"{n}.py" for n in ("openai", "vllm", "hf"))]
    assert [p.name for p in sources if "coders.template" in p.read_text()] == []


def test_hybrid_start_takes_the_template_port_without_asking_the_model(template_port):
    task, port = template_port
    chat = ScriptedChat()
    program = hybrid(chat).apply(task, None, PORT)
    assert chat.sent == [] and program.source == port.source
    assert "usage" not in program.metadata  # nothing was spent


def test_the_menu_follows_the_template_through_llm_steps(template_port):
    task, port = template_port
    template = TemplateCoder()
    coder = hybrid(ScriptedChat(fenced(variant("tuned"))))
    start = coder.apply(task, None, PORT)
    assert coder.legal_strategies(task, start) == template.legal_strategies(task, port)
    step = next(s for s in coder.legal_strategies(task, start) if s.kind == "tile")
    after = coder.apply(task, start, step)
    assert after.source == variant("tuned")  # the model's program, not the template's
    tiled = template.apply(task, port, step)
    assert coder.legal_strategies(task, after) == template.legal_strategies(task, tiled)
    assert coder.legal_strategies(task, after) != coder.legal_strategies(task, start)


def test_the_step_prompt_carries_the_current_program(template_port):
    task, port = template_port
    chat = ScriptedChat(fenced(PROGRAM))
    coder = hybrid(chat)
    coder.apply(task, coder.apply(task, None, PORT), Strategy("vectorize"))
    assert port.source.strip() in chat.prompt(0) and "`vectorize`" in chat.prompt(0)


def test_without_hybrid_start_the_model_writes_the_port(template_port):
    task, _ = template_port
    chat = ScriptedChat(fenced(PROGRAM))
    program = LLMCoder(chat, menu=TemplateMenu()).apply(task, None, PORT)
    assert program.source == PROGRAM and "no program yet" in chat.prompt(0)
    assert program.metadata["usage"] == {"requests": 1, "latency_s": 0.5, "prompt_tokens": 100,
                                         "completion_tokens": 50}
    assert program.metadata[MENU_KEY] is not None  # the template still provides the menu


def test_a_failed_template_port_goes_to_the_model_with_the_failure(template_port):
    task, port = template_port
    chat = ScriptedChat(fenced(PROGRAM))
    coder = hybrid(chat)
    coder.apply(task, None, PORT)
    failed = Verdict(Status.RUNTIME_ERROR, message="illegal memory access")
    assert coder.apply(task, None, PORT, feedback=failed).source == PROGRAM
    assert "illegal memory access" in chat.prompt(0) and port.source.strip() in chat.prompt(0)


def test_tasks_the_template_cannot_port_go_to_the_model_with_a_generic_menu():
    chat = ScriptedChat(fenced(variant("port")), fenced(variant("vectorized")))
    coder = hybrid(chat)
    port = coder.apply(SORT, None, PORT)
    assert len(chat.sent) == 1 and port.metadata[MENU_KEY] is None
    menu = coder.legal_strategies(SORT, port)
    assert menu == [*generic_menu(SORT), STOP] and Strategy("vectorize") in menu
    assert not any(s.kind == "fuse" for s in menu)  # one op: nothing to fuse
    after = coder.apply(SORT, port, Strategy("vectorize"))
    assert Strategy("vectorize") not in coder.legal_strategies(SORT, after)
    assert after.metadata["llm_steps"] == ["port", "vectorize"]


def test_a_retry_shows_the_failed_attempt_of_the_same_step_only(template_port):
    task, _ = template_port
    chat = ScriptedChat(fenced(variant("first")), fenced(variant("second")), fenced(variant("other")))
    coder = hybrid(chat)
    start = coder.apply(task, None, PORT)
    coder.apply(task, start, Strategy("vectorize"))
    wrong = Verdict(Status.INCORRECT, message="mismatch", max_abs_error=2.0)
    coder.apply(task, start, Strategy("vectorize"), feedback=wrong)
    assert "# first" in chat.prompt(1) and "mismatch" in chat.prompt(1)
    coder.apply(task, start, Strategy.make("num_warps", 8), feedback=wrong)  # not the step that failed
    assert "# second" not in chat.prompt(2) and "The failed attempt" not in chat.prompt(2)


def test_a_reply_without_code_raises_with_what_it_cost():
    coder = LLMCoder(ScriptedChat("I would rather not."))
    with pytest.raises(CoderError, match="no program in the reply") as err:
        coder.apply(tiny_task(), None, PORT)
    assert err.value.usage == {"requests": 1, "latency_s": 0.5, "prompt_tokens": 100, "completion_tokens": 50}


def test_stop_is_never_applied():
    with pytest.raises(CoderError, match="stop"):
        LLMCoder(ScriptedChat()).apply(tiny_task(), None, STOP)
    with pytest.raises(CoderError, match="stop"):
        hybrid(ScriptedChat()).apply(tiny_task(), None, STOP)


def test_a_port_refused_for_tf32_is_retried_by_the_template_without_asking_the_model():
    """tf32_beyond_eager is the template's to mend: its retry is the same port, fp32-exact."""
    from tests.coders.test_template_exact_fp32 import REFUSED, runs_task

    task, chat = runs_task(), ScriptedChat(fenced(PROGRAM))
    coder = hybrid(chat)
    port = coder.apply(task, None, PORT)
    retry = coder.apply(task, None, PORT, feedback=REFUSED)
    assert chat.sent == [] and retry.source == TemplateCoder().apply(task, None, PORT, REFUSED).source
    assert retry.source != port.source and 'input_precision="tf32"' not in retry.source
