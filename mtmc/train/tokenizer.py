"""The tiny model's tokenizer: whole words where training saw them, pieces where it did not, never `<unk>`.

    tokenizer = piece_tokenizer(train_texts)

A WordPiece vocabulary over whitespace-separated words: every word of `texts` is one token (so a
strategy such as `tile BLOCK=1024` stays two tokens and decodes back to its canonical text), and a
word it never saw is spelled greedily from the pieces of the words it did see (letter runs such as
`softmax`, `log`, `float`) and, failing those, from single characters: every printable ASCII character
is in the vocabulary, and a number is spelled digit by digit. So a task nobody trained on (an eval
split's op `_log_softmax`, a variant's shape `1048576x512`) reads as pieces the model has embeddings
for, where the word-level vocabulary it replaces read its op names as `<unk>` (issue 26: 9 of the 13
eval tasks). `<unk>` stays in the vocabulary only for text outside printable ASCII.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable

from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

from mtmc.strategies import KINDS

PAD, EOS, UNK = "<pad>", "<eos>", "<unk>"
CONTINUE = "##"  # WordPiece's mark of a piece inside a word
CHARACTERS = sorted(set(string.printable) - set(string.whitespace))
PIECE = re.compile(r"[A-Za-z]+|\d|[^A-Za-z\d]")  # letter runs, single digits, single symbols
LONGEST_WORD = 10_000  # WordPiece reads a longer word as <unk> (its default is 100)


def piece_tokenizer(texts: Iterable[str]) -> PreTrainedTokenizerFast:
    words = {word for text in texts for word in text.split()} | set(KINDS)
    pieces = {piece for word in words for piece in PIECE.findall(word)} | set(CHARACTERS)
    tokens = [PAD, EOS, UNK]
    for entry in sorted(words) + sorted(pieces) + [CONTINUE + p for p in sorted(pieces)]:
        if entry not in tokens:  # a one-letter word is also a piece
            tokens.append(entry)
    vocab = {token: i for i, token in enumerate(dict.fromkeys(tokens))}
    core = Tokenizer(models.WordPiece(vocab=vocab, unk_token=UNK, continuing_subword_prefix=CONTINUE,
                                      max_input_chars_per_word=LONGEST_WORD))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    core.decoder = decoders.WordPiece(prefix=CONTINUE, cleanup=False)
    return PreTrainedTokenizerFast(tokenizer_object=core, pad_token=PAD, eos_token=EOS, unk_token=UNK)
