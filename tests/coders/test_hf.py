"""The hf coder on a tiny random Llama and a word-level tokenizer, both built here and saved to a
folder, so the real `from_pretrained(folder)` path runs with no hub and no network.

The model's output is junk by construction; what matters is that it goes through the real
generate path, is counted, and that the loop rejects it and keeps the best program.

    pytest tests/coders/test_hf.py
"""

from __future__ import annotations

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from coders.hf import HFChat, hf_coder
from coders.llm import build_messages
from coders.template import TemplateCoder
from coders.template.menu import TemplateMenu
from mtmc.budgets import Budgets
from mtmc.graph import Context, build_graph, initial_state, run_config
from mtmc.strategies import PORT
from mtmc.verify import InterpreterVerifier
from tests.graph.fakes import tiny_task
from tests.scripted_planner import ScriptedPlanner

SPECIAL = ["<pad>", "<eos>", "<unk>", "<|system|>", "<|user|>", "<|assistant|>"]
# words the junk can be made of: enough code-like tokens that a fence or a class line may appear
WORDS = ["```", "```python", "import", "torch", "triton", "class", "ModelNew", "def", "forward", "(", ")",
         ":", "return", "x", "tl.load", "tl.store", "@triton.jit", "\n"]
CHAT_TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|> {{ m['content'] }} {% endfor %}"
                 "{% if add_generation_prompt %}<|assistant|>{% endif %}")
MAX_NEW_TOKENS = 12


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny-llama")
    vocab = {token: i for i, token in enumerate(SPECIAL + WORDS)}
    words = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    words.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=words, pad_token="<pad>", eos_token="<eos>",
                                        unk_token="<unk>", additional_special_tokens=SPECIAL[3:])
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.save_pretrained(folder)
    config = LlamaConfig(vocab_size=len(vocab), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=8192,
                         pad_token_id=0, eos_token_id=1, bos_token_id=None)
    LlamaForCausalLM(config).save_pretrained(folder)
    return folder


def test_generate_counts_prompt_and_completion_tokens(tiny_model):
    chat = HFChat(str(tiny_model), max_new_tokens=MAX_NEW_TOKENS, temperature=0.0)
    messages = build_messages(tiny_task(), None, PORT)
    answer = chat.complete(messages)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)  # counted independently of the coder
    expected = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=True,
                                             return_dict=True)["input_ids"]
    assert answer.prompt_tokens == len(expected) > 100  # the chat template ran over the whole prompt
    assert 1 <= answer.completion_tokens <= MAX_NEW_TOKENS and answer.latency_s > 0
    assert answer.finish_reason == ("length" if answer.completion_tokens == MAX_NEW_TOKENS else "stop")
    assert chat.complete(messages).text == answer.text  # greedy: the same prompt, the same junk


def test_sampling_respects_the_token_limit(tiny_model):
    chat = HFChat(str(tiny_model), max_new_tokens=3, temperature=1.0, seed=1)
    answer = chat.complete([{"role": "user", "content": "class ModelNew"}])
    assert 1 <= answer.completion_tokens <= 3


def test_junk_is_rejected_and_the_best_program_kept(tiny_model):
    """The template's port is verified and accepted; the tiny model's two attempts at the next step
    are junk, so the step is rejected (no program in the reply, or a program the verifier fails)
    and the port stays the program."""
    task = tiny_task()
    coder = hf_coder(str(tiny_model), max_new_tokens=MAX_NEW_TOKENS, temperature=1.0, hybrid_start=True,
                     start=TemplateCoder(), menu=TemplateMenu())
    with InterpreterVerifier(seeds=1) as verifier:
        context = Context(task=task, planner=ScriptedPlanner(["port", "vectorize"]), coder=coder,
                          verifier=verifier, budgets=Budgets(max_steps=3, max_retries=1))
        state = build_graph().compile(checkpointer=InMemorySaver()).invoke(
            initial_state(), run_config("t", Budgets(max_steps=3, max_retries=1)), context=context)
    port, *llm = state["trajectory"]
    assert (port["strategy"], port["outcome"]) == ("port", "accepted")
    assert [(r["strategy"], r["outcome"]) for r in llm] == [("vectorize", "retry"), ("vectorize", "rejected")]
    assert all(r["status"] != "ok" for r in llm)
    assert state["program"]["source"] == coder.apply(task, None, PORT).source  # the template's port
    for record in llm:
        assert record["usage"]["prompt_tokens"] > 100
        assert 1 <= record["usage"]["completion_tokens"] <= MAX_NEW_TOKENS
