"""A tiny random Llama and its tokenizer, built here: `mtmc train model=tiny` smoke runs and tests.

    model, tokenizer = build_tiny(texts)     # texts: the prompts and completions it will see

Nothing is downloaded. The vocabulary (mtmc/train/tokenizer.py) holds the whitespace-separated words
of `texts` plus every strategy kind as whole tokens, so the planner's prompts and strategies tokenize
into whole words and decode back to the exact canonical text (`tile BLOCK=1024` is two tokens, `tile`
and `BLOCK=1024`); a word outside them is spelled in pieces (letter runs, digits, characters), never
`<unk>`, so the model can read a task it was not built on. Llama rather than Qwen2: transformers'
AutoTokenizer swaps in the Qwen2 BPE tokenizer class for a `qwen2` checkpoint, which cannot read this
vocabulary.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

from mtmc.train.tokenizer import piece_tokenizer


def build_tiny(texts: Iterable[str], *, hidden_size: int = 64, num_layers: int = 2,
               seed: int = 0) -> tuple[LlamaForCausalLM, PreTrainedTokenizerFast]:
    tokenizer = piece_tokenizer(texts)
    torch.manual_seed(seed)  # the random weights depend only on the seed
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=hidden_size, intermediate_size=2 * hidden_size,
        num_hidden_layers=num_layers, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=1024, tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, bos_token_id=None,
    )
    model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model, tokenizer
