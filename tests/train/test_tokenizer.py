"""The tiny model's tokenizer (mtmc/train/tokenizer.py): built from train-split prompts only, it reads every
eval-split and variant task's prompt without one `<unk>`, keeps known words whole and decodes back."""

import pytest

from mtmc.lm_policy import render_prompt
from mtmc.protocols import StepRecord
from mtmc.strategies import KINDS
from mtmc.tasks import load_suite, summarize
from mtmc.train.tiny import build_tiny
from mtmc.train.tokenizer import piece_tokenizer

# a history with a speedup, a rejected step and a floor share: the numbers a prompt carries besides sizes
HISTORY = [StepRecord(0, "port", "ok", True, None, 0.2),
           StepRecord(1, "tile BLOCK_M=128 BLOCK_N=64 BLOCK_K=32", "ok", True, 1.37, 0.5),
           StepRecord(2, "num_warps 8", "incorrect", False, None, -0.5)]


def prompts(suite: str) -> list[str]:
    summaries = [summarize(task) for task in load_suite(suite)]
    return [render_prompt(s, history, steps_left=4 - len(history), floor_share=share)
            for s in summaries for history, share in (([], None), (HISTORY, 0.43))]


@pytest.fixture(scope="module")
def train_and_unseen():
    train = prompts("builtin:train") + prompts("variants:train")
    unseen = prompts("builtin:eval") + prompts("variants")  # every variant: new shapes on both sides
    return train, unseen


def test_unseen_prompts_read_without_unk(train_and_unseen):
    train, unseen = train_and_unseen
    tokenizer = piece_tokenizer(train)
    new_words = {w for p in unseen for w in p.split()} - {w for p in train for w in p.split()}
    assert len(new_words) > 50  # eval ops and shapes the vocabulary never saw: a word level would read <unk>
    for prompt in unseen:
        ids = tokenizer(prompt)["input_ids"]
        assert tokenizer.unk_token_id not in ids, [t for t in tokenizer.convert_ids_to_tokens(ids)]
        assert tokenizer.decode(ids) == " ".join(prompt.split())
    model, _ = build_tiny(train)
    longest = max(len(tokenizer(p)["input_ids"]) for p in unseen)
    assert longest < model.config.max_position_embeddings / 2, longest  # room for the completion


def test_known_words_stay_whole_and_new_ones_are_spelled_in_pieces():
    tokenizer = piece_tokenizer(["ops _softmaxx1 inputs float32[4096x4096]", "tile BLOCK=1024"])
    assert tokenizer.tokenize("tile BLOCK=1024") == ["tile", "BLOCK=1024"]
    assert all(kind in tokenizer.get_vocab() for kind in KINDS)
    assert tokenizer.tokenize("BLOCK=2048") == ["BLOCK", "##=", "##2", "##0", "##4", "##8"]
    assert tokenizer.tokenize("float32[16x8]")[:3] == ["float", "##3", "##2"]
    assert tokenizer.tokenize("é") == ["<unk>"]  # outside printable ASCII: the one way to an <unk>
