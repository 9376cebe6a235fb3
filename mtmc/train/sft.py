"""Supervised warm start: TRL's SFTTrainer on (prompt, completion) examples from mtmc/train/data.py.

    log_history = train_sft(model, tokenizer, examples, SFTConfig(output_dir=..., completion_only_loss=True))

The dataset is in TRL's prompt-completion format, so with `completion_only_loss` the loss is on the
strategy text (and its end-of-sequence token) only, never on the prompt. The model is trained in
place; saving it is the job's business (mtmc/jobs/train.py).

`underfit_warning` reads the run's log: the LM planner ranks whole steps by their summed
log-probability, so a model that has not learned the recorded steps' tokens ranks the shortest
step, `stop`, first. Seen on the H200 (2026-11-24): the tiny model under the default 3 epochs at
lr 1e-4 ended at token accuracy 0 and stopped after the port on all 13 eval tasks; 60 epochs at
lr 1e-3 reached 1.0 on 75 examples.
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


# Below this final token accuracy on its own examples the planner has not learned the steps it saw.
UNDERFIT_ACCURACY = 0.9


def final_token_accuracy(log_history: Sequence[dict]) -> float | None:
    """The last `mean_token_accuracy` TRL logged (on the completion tokens: the strategies)."""
    values = [entry["mean_token_accuracy"] for entry in log_history if "mean_token_accuracy" in entry]
    return float(values[-1]) if values else None


def underfit_warning(log_history: Sequence[dict]) -> str | None:
    """A one-line warning when SFT ended without fitting its examples; None when it fit (or no log)."""
    accuracy = final_token_accuracy(log_history)
    if accuracy is None or accuracy >= UNDERFIT_ACCURACY:
        return None
    return (f"SFT ended at token accuracy {accuracy:.2f} on its own examples (under {UNDERFIT_ACCURACY}): "
            "the planner has not learned the recorded steps, and ranking whole steps by likelihood it "
            "will prefer the shortest one, `stop`. Train longer or faster (sft.num_train_epochs, "
            "sft.learning_rate): model=tiny, which starts from random weights, fit 75 examples with "
            "sft.num_train_epochs=60 sft.learning_rate=1e-3")
