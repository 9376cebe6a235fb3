"""The LLM coders' shared prompt (coders/llm/prompt.py, coders/prompts/*.md) and code extraction
(coders/llm/extract.py).

    pytest tests/coders/test_prompt.py
"""

from __future__ import annotations

import pytest

from coders.llm.extract import extract_program
from coders.llm.prompt import PROMPTS, STEP_KINDS, build_messages, clip, step_prompt, user_prompt
from mtmc.program import Program
from mtmc.protocols import CoderError
from mtmc.strategies import KINDS, Strategy
from mtmc.tasks import load_task
from mtmc.verify.policy import ALLOWED_IMPORTS
from mtmc.verify.verdict import Status, Verdict
from tests.graph.fakes import tiny_task

PROGRAM = '''import torch
import triton
import triton.language as tl


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return x
'''
FRAMES = {"system", "user", "program", "no_program", "feedback", "previous"}


def example(kind: str) -> Strategy:
    positional, names, _ = KINDS[kind]
    return Strategy.make(kind, "epilogue" if positional else None, **({names[0]: 64} if names else {}))


# ---------------------------------------------------------------------------------------------------
# prompt


@pytest.mark.parametrize("kind", STEP_KINDS)
def test_every_step_kind_has_its_own_template(kind):
    strategy = example(kind)
    text = step_prompt(strategy)
    assert (PROMPTS / f"{kind}.md").is_file()
    assert f"`{strategy}`" in text and strategy.instruction() in text
    assert "$" not in text  # every placeholder was filled


def test_no_template_file_without_a_use():
    assert {p.stem for p in PROMPTS.glob("*.md")} == set(STEP_KINDS) | FRAMES


def test_stop_is_not_a_step_to_prompt_for():
    with pytest.raises(ValueError, match="stop"):
        step_prompt(Strategy("stop"))


def test_system_prompt_states_the_verifiers_import_rules():
    system = build_messages(tiny_task(), None, Strategy("port"))[0]["content"]
    for module in ALLOWED_IMPORTS - {"__future__"}:
        assert f"`{module}`" in system
    assert "ModelNew" in system and "```python" in system


def test_first_attempt_shows_reference_program_and_step_but_no_feedback():
    task = tiny_task()
    text = user_prompt(task, Program(PROGRAM), Strategy.make("num_warps", 8))
    assert task.source.strip() in text and PROGRAM.strip() in text
    assert "`num_warps 8`" in text and "num_warps=8" in text
    assert "failed" not in text


def test_port_says_there_is_no_program_yet():
    text = user_prompt(tiny_task(), None, Strategy("port"))
    assert "no program yet" in text and "## Current program" in text


def test_retry_shows_the_verdict_its_statistics_and_the_failed_attempt():
    verdict = Verdict(Status.INCORRECT, message="output 0: max |out - ref| = 3.87", max_abs_error=3.8723,
                      rel_error=0.5, flags=["nondeterministic"])
    text = user_prompt(tiny_task(), Program(PROGRAM), Strategy("vectorize"), verdict, previous="BROKEN = 1\n")
    assert "**incorrect**" in text and "output 0: max |out - ref| = 3.87" in text
    assert "max |out - ref|: 3.87" in text and "||out - ref|| / ||ref||: 0.5" in text
    assert "flag: nondeterministic" in text and "BROKEN = 1" in text


def test_feedback_without_metrics_says_so():
    failed = Verdict(Status.COMPILE_ERROR, message="SyntaxError")
    text = user_prompt(tiny_task(), None, Strategy("port"), failed)
    assert "SyntaxError" in text and "no error metrics" in text and "The failed attempt" not in text


def test_long_messages_keep_head_and_tail():
    message = "HEAD " + "x" * 10_000 + " TAIL"
    clipped = clip(message, limit=100)
    assert clipped.startswith("HEAD") and clipped.endswith("TAIL") and len(clipped) < 200
    assert "characters cut" in clipped and clip("short") == "short"


def test_library_tasks_name_the_call_they_may_keep():
    task = load_task("conv_bn_silu")
    assert task.library_ops, "the built-in conv task is expected to allow its convolution"
    assert "vendor-library call for `conv2d`" in user_prompt(task, None, Strategy("port"))
    assert "vendor-library" not in user_prompt(tiny_task(), None, Strategy("port"))


# ---------------------------------------------------------------------------------------------------
# extraction


def fenced(code: str, tag: str = "python") -> str:
    return f"```{tag}\n{code}```"


@pytest.mark.parametrize("tag", ["python", "py", "Python3", ""])
def test_a_fenced_block_is_the_program(tag):
    assert extract_program(fenced(PROGRAM, tag)) == PROGRAM


def test_prose_around_the_block_is_dropped():
    text = f"Sure! Vectorizing the loads:\n\n{fenced(PROGRAM)}\n\nThis keeps the masks intact."
    assert extract_program(text) == PROGRAM


def test_the_last_block_defining_model_new_wins():
    draft = PROGRAM.replace("return x", "return x  # draft")
    helper, usage = fenced("def helper(): pass\n"), fenced("model = ModelNew()\n")
    text = f"Draft:\n{fenced(draft)}\nHelper:\n{helper}\nFinal:\n{fenced(PROGRAM)}\nUsage:\n{usage}"
    assert extract_program(text) == PROGRAM


def test_blocks_in_other_languages_are_not_programs():
    with pytest.raises(CoderError, match="none of the reply's 1 code block"):
        extract_program(fenced("class ModelNew: pass\n", "cpp"))


def test_an_indented_fence_is_dedented():
    indented = "".join(f"   {line}\n" if line else "\n" for line in PROGRAM.splitlines())
    text = f"1. The program:\n\n   ```python\n{indented}   ```\n"
    assert extract_program(text) == PROGRAM


def test_a_forgotten_closing_fence_still_gives_the_program():
    assert extract_program(f"```python\n{PROGRAM}") == PROGRAM


def test_a_reply_cut_off_at_the_token_limit_is_no_program():
    with pytest.raises(CoderError, match="cut off at the token limit"):
        extract_program(f"```python\n{PROGRAM[:-20]}", finish_reason="length")


def test_a_bare_python_reply_is_the_whole_file():
    assert extract_program(PROGRAM) == PROGRAM
    assert extract_program("Here is the program:\n" + PROGRAM) == PROGRAM


def test_thinking_is_dropped_before_looking_for_code():
    draft = fenced(PROGRAM.replace("return x", "return -x"))
    assert extract_program(f"<think>first try:\n{draft}</think>\n{fenced(PROGRAM)}") == PROGRAM
    # a chat template that opens <think> in the prompt leaves only the closing tag in the reply
    assert extract_program(f"first try:\n{draft}</think>\n{fenced(PROGRAM)}") == PROGRAM


def test_a_reply_without_code_fails_clearly_and_quotes_it():
    with pytest.raises(CoderError, match=r"no program in the reply.*'I cannot help with that"):
        extract_program("I cannot help with that request.")


def test_prose_that_mentions_model_new_is_not_a_program():
    with pytest.raises(CoderError, match="no program in the reply"):
        extract_program("You should write\nclass ModelNew that launches a kernel, like this.")


def test_an_empty_reply_fails_clearly():
    with pytest.raises(CoderError, match="empty"):
        extract_program("  \n")
    with pytest.raises(CoderError, match="empty"):
        extract_program("<think>hmm</think>")
