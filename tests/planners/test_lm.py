"""LM planner: legal steps only, greedy determinism, seeded sampling, batched scoring, the prompt, and
bad checkpoints.

A tiny random Llama with a word-level vocabulary (mtmc/train/tiny.py) is saved to a temporary folder
and loaded back through LMPlanner, the way `planner=lm planner.checkpoint=<dir>` loads it.

    pytest tests/planners/test_lm.py
"""

from __future__ import annotations

import pytest
import torch

from mtmc.lm_policy import (
    CheckpointError,
    ScoredCompletion,
    common_prefix,
    completion_text,
    render_prompt,
    score_completions,
    state_prompt,
    tokenize_completions,
)
from mtmc.program import Program
from mtmc.protocols import PlanState, StepRecord
from mtmc.strategies import STOP, Strategy
from mtmc.tasks import Task, TaskSummary
from mtmc.tasks.summary import TensorInfo
from mtmc.train.tiny import build_tiny
from mtmc.verify.verdict import TF32_BEYOND_EAGER, Status, Verdict
from planners.lm import LMPlanner

SUMMARY = TaskSummary("sm", {"_softmax": 1}, [TensorInfo([4096, 4096], "float32")],
                      [TensorInfo([4096, 4096], "float32")], 0, 5 * 4096 * 4096, 0, 2 * 4096 * 4096 * 4)
MENUS = [
    ["port"],
    ["fuse epilogue", "vectorize", "tile BLOCK=1024", "num_warps 8", "stop"],
    ["tile BLOCK_M=64 BLOCK_N=64 BLOCK_K=32", "group_m 8", "num_stages 3", "split_k 4", "autotune", "stop"],
    ["library conv2d", "precision tf32", "persistent", "stop"],  # words the vocabulary never saw: <unk>
]
HISTORY = [StepRecord(0, "port", "ok", True, None, 0.2),
           StepRecord(1, "vectorize", "incorrect", False, None, -0.5)]


def state(legal: list[str], history=(), steps_left: int = 10) -> PlanState:
    return PlanState(task=Task("sm", ""), summary=SUMMARY, program=Program("class ModelNew: ..."),
                     verdict=None, legal=[Strategy.parse(s) for s in legal], history=list(history),
                     steps_left=steps_left)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    texts = [render_prompt(SUMMARY, HISTORY[:n], 10 - n) for n in range(3)]
    texts += [s for menu in MENUS[:3] for s in menu]
    model, tokenizer = build_tiny(texts, seed=0)
    folder = tmp_path_factory.mktemp("tiny_lm")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


# ---------------------------------------------------------------------------------------------------
# choosing


def test_proposes_only_legal_steps(checkpoint):
    greedy, hot = LMPlanner(str(checkpoint)), LMPlanner(str(checkpoint), temperature=5.0, seed=3)
    for legal in MENUS:
        for history in ((), HISTORY[:1], HISTORY):
            for planner in (greedy, hot):
                assert planner.propose(state(legal, history)) in [Strategy.parse(s) for s in legal]


def test_greedy_is_deterministic_and_is_the_argmax(checkpoint):
    first, second = LMPlanner(str(checkpoint)), LMPlanner(str(checkpoint))
    s = state(MENUS[1], HISTORY)
    picks = {str(first.propose(s)), str(second.propose(s)), str(first.propose(s))}
    assert len(picks) == 1
    scores = first.score(render_prompt(SUMMARY, HISTORY, 10), [completion_text(t) for t in MENUS[1]])
    assert picks == {MENUS[1][max(range(len(scores)), key=scores.__getitem__)]}


def test_sampling_is_seeded_per_step_and_explores(checkpoint):
    s = state(MENUS[1], HISTORY)
    draws = [str(LMPlanner(str(checkpoint), temperature=50.0, seed=seed).propose(s)) for seed in range(12)]
    again = [str(LMPlanner(str(checkpoint), temperature=50.0, seed=seed).propose(s)) for seed in range(12)]
    assert draws == again  # a resumed run makes the same draws
    assert len(set(draws)) > 1  # near-uniform at a high temperature: not always the argmax


def test_batched_scores_equal_one_completion_at_a_time(checkpoint):
    planner = LMPlanner(str(checkpoint))
    prompt = render_prompt(SUMMARY, HISTORY, 8)
    completions = [completion_text(t) for t in MENUS[2]]  # different lengths: right padding in the batch
    batched = planner.score(prompt, completions)
    alone = [planner.score(prompt, [c])[0] for c in completions]
    assert batched == pytest.approx(alone, abs=1e-4)
    assert all(s < 0 for s in batched)


def test_a_completion_is_scored_on_its_own_tokens_and_the_eos(checkpoint):
    planner = LMPlanner(str(checkpoint))
    prompt = render_prompt(SUMMARY, (), 10)
    (row,), (start,) = tokenize_completions(planner.tokenizer, prompt, [" tile BLOCK=1024"])
    assert planner.tokenizer.convert_ids_to_tokens(row[start:]) == ["tile", "BLOCK=1024", "<eos>"]
    ids = torch.tensor([row])
    logprobs = planner.model(input_ids=ids).logits[0].log_softmax(-1)
    by_hand = sum(logprobs[i - 1, row[i]].item() for i in range(start, len(row)))
    assert planner.score(prompt, [" tile BLOCK=1024"])[0] == pytest.approx(by_hand, abs=1e-4)


def test_negative_temperature_is_refused(checkpoint):
    with pytest.raises(ValueError, match="temperature"):
        LMPlanner(str(checkpoint), temperature=-1.0)


# ---------------------------------------------------------------------------------------------------
# the prompt


def test_prompt_shows_the_task_the_history_and_the_budget():
    prompt = render_prompt(SUMMARY, HISTORY, 7)
    lines = prompt.splitlines()
    assert lines[0] == "ops _softmaxx1"
    assert lines[1] == "inputs float32[4096x4096]" and lines[2] == "outputs float32[4096x4096]"
    assert "bound memory" in lines[3] and "flops 8e+07" in lines[3]
    assert "step 0 port status ok accepted speedup -" in lines
    assert "step 1 vectorize status incorrect rejected speedup -" in lines
    assert lines[-2:] == ["steps_left 7", "next:"]
    assert "sm" not in prompt.split()  # no task name: eval tasks are never seen in training
    timed = [StepRecord(0, "port", "ok", True, 1.234, 0.4)]
    assert "step 0 port status ok accepted speedup 1.23x" in render_prompt(SUMMARY, timed, 5)


def test_prompt_shows_why_a_refused_step_was_refused_and_nothing_more_for_the_others():
    refused = [StepRecord(0, "port", "incorrect", False, None, -0.5, reason=TF32_BEYOND_EAGER),
               StepRecord(1, "port", "ok", True, None, 0.2)]
    lines = render_prompt(SUMMARY, refused, 6).splitlines()
    assert "step 0 port status incorrect rejected speedup - reason tf32_beyond_eager" in lines
    assert "step 1 port status ok accepted speedup -" in lines
    # a step with no reason, or an accepted one (a flag, not a refusal), reads as it always did
    plain = [StepRecord(0, "port", "ok", True, None, 0.2, reason=TF32_BEYOND_EAGER), HISTORY[1]]
    assert render_prompt(SUMMARY, plain, 7) == render_prompt(SUMMARY, HISTORY, 7)


def test_prompt_shows_how_close_the_program_is_to_the_floor():
    assert render_prompt(SUMMARY, HISTORY, 7).splitlines()[-3] == "floor -"  # untimed (CPU)
    assert render_prompt(SUMMARY, HISTORY, 7, floor_share=0.974).splitlines()[-3] == "floor 0.97"
    state = PlanState(task=Task(name="sm", source=""), summary=SUMMARY, program=Program(""),
                      verdict=Verdict(Status.OK, candidate_ms=2.0, roofline_ms=1.0), legal=[STOP],
                      history=list(HISTORY), steps_left=7)
    assert "floor 0.50" in state_prompt(state).splitlines()
    assert completion_text(STOP) == " stop"


# ---------------------------------------------------------------------------------------------------
# bad checkpoints


def test_missing_checkpoint_folder_is_a_clear_error(tmp_path):
    with pytest.raises(CheckpointError, match=f"{tmp_path / 'nope'}: no such checkpoint folder"):
        LMPlanner(str(tmp_path / "nope"))


def test_folder_that_is_not_a_model_is_a_clear_error(tmp_path):
    (tmp_path / "notes.txt").write_text("not a model")
    with pytest.raises(CheckpointError, match="not a model folder"):
        LMPlanner(str(tmp_path))


def test_broken_checkpoint_is_a_clear_error(tmp_path, checkpoint):
    # a config, but no weights and no tokenizer
    (tmp_path / "config.json").write_text((checkpoint / "config.json").read_text())
    with pytest.raises(CheckpointError, match="cannot load the planner checkpoint"):
        LMPlanner(str(tmp_path))


# ---------------------------------------------------------------------------------------------------
# length-normalised scoring


def test_mean_scoring_lifts_a_longer_step_that_sum_scoring_loses_to_stop():
    # per-token log-probabilities: a three-token step likely per token, `stop` less likely per token
    tile = ScoredCompletion([0], [1, 2, 3], torch.tensor([-1.0, -1.0, -0.1]))
    stop = ScoredCompletion([0], [4, 3], torch.tensor([-1.5, -0.1]))
    assert stop.scored("sum") > tile.scored("sum")  # -1.6 > -2.1: the shorter wins on likelihood
    assert tile.scored("mean") > stop.scored("mean")  # -0.7 > -0.8: per token the longer one wins
    with pytest.raises(ValueError, match="scoring"):
        tile.scored("max")


def test_the_planner_scores_by_its_scoring(checkpoint):
    summed, mean = LMPlanner(str(checkpoint)), LMPlanner(str(checkpoint), scoring="mean")
    prompt = render_prompt(SUMMARY, HISTORY, 10)
    completions = [completion_text(t) for t in MENUS[2]]
    rows, starts = tokenize_completions(summed.tokenizer, prompt, completions)
    lengths = [len(row) - start for row, start in zip(rows, starts, strict=True)]
    assert len(set(lengths)) > 1  # steps of several lengths, or the two scorings would agree
    expected = [s / n for s, n in zip(summed.score(prompt, completions), lengths, strict=True)]
    assert mean.score(prompt, completions) == pytest.approx(expected, abs=1e-5)
    with pytest.raises(ValueError, match="scoring"):
        LMPlanner(str(checkpoint), scoring="max")


def byte_bpe(texts: list[str]):
    """A small byte-level BPE whose merges cross the prompt's end: a completion can change the prompt's
    last token, as in real BPE vocabularies (the tiny model's word tokenizer never does)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    core = Tokenizer(models.BPE())
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    core.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=300, special_tokens=["<eos>"]))
    return PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<eos>")


@pytest.mark.parametrize("kind", ["words", "bpe"])
def test_completions_are_tokenized_as_each_text_alone(kind):
    prompt = render_prompt(SUMMARY, HISTORY, 10)
    completions = [completion_text(t) for t in MENUS[2]] + ["stopstop", ":x"]
    texts = [prompt + c for c in completions]
    tokenizer = build_tiny(texts)[1] if kind == "words" else byte_bpe(texts * 20)
    rows, starts = tokenize_completions(tokenizer, prompt, completions)
    alone = tokenizer(prompt)["input_ids"]
    assert rows == [tokenizer(prompt + c + tokenizer.eos_token)["input_ids"] for c in completions]
    assert starts == [max(1, common_prefix(alone, row)) for row in rows]
    if kind == "bpe":  # ":x" merges with the prompt's last token: that token is the completion's
        assert starts[-1] < len(alone)


def test_common_prefix_is_where_two_id_lists_part():
    assert common_prefix([1, 2, 3], [1, 2, 3, 4]) == 3
    assert common_prefix([1, 2, 3], [1, 2]) == 2
    assert common_prefix([1, 2, 3], [1, 5, 3]) == 1
    assert common_prefix([], [1]) == 0


def test_each_completion_is_scored_at_its_own_positions():
    # only the completions' positions are normalised: each one's tokens, scored alone, unpadded
    prompt = render_prompt(SUMMARY, HISTORY, 10)
    completions = [completion_text(t) for t in MENUS[2]]
    model, tokenizer = build_tiny([prompt + c for c in completions])
    with torch.no_grad():
        scored = score_completions(model, tokenizer, prompt, completions)
        rows, starts = tokenize_completions(tokenizer, prompt, completions)
        for option, row, start in zip(scored, rows, starts, strict=True):
            ids = torch.tensor([row])
            whole = model(input_ids=ids).logits.float()[0, :-1].log_softmax(-1).gather(-1, ids[0, 1:, None])
            assert torch.allclose(option.logprobs, whole[start - 1:, 0], atol=1e-6, rtol=0)
