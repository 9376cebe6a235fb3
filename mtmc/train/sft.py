"""Supervised warm start: TRL's SFTTrainer on (prompt, completion) examples from mtmc/train/data.py.

    log_history = train_sft(model, tokenizer, examples, SFTConfig(output_dir=..., completion_only_loss=True))

The dataset is in TRL's prompt-completion format, so with `completion_only_loss` the loss is on the
strategy text (and its end-of-sequence token) only, never on the prompt. The model is trained in
place; saving it is the job's business (mtmc/jobs/train.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from datasets import Dataset
from trl import SFTConfig, SFTTrainer


def train_sft(model: Any, tokenizer: Any, examples: Sequence[dict[str, str]], args: SFTConfig) -> list[dict]:
    if not examples:
        raise ValueError("train_sft: no examples")
    if not args.completion_only_loss:
        # Training on the prompt would teach the model to write task summaries, not to choose steps.
        raise ValueError("train_sft: completion_only_loss must be true (the loss belongs on the strategy)")
    dataset = Dataset.from_list([{"prompt": e["prompt"], "completion": e["completion"]} for e in examples])
    trainer = SFTTrainer(model=model, args=args, train_dataset=dataset, processing_class=tokenizer)
    trainer.train()
    return trainer.state.log_history
