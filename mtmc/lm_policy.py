"""The LM policy's text and arithmetic, shared by the planner (planners/lm.py) and training (mtmc/train).

`render_prompt` and `completion_text` are the only place the policy's input and output are spelled
out: `mtmc train` builds its SFT and GRPO examples with the same two functions, so training sees
exactly what inference sees. `score_completions` scores every legal step's canonical text as a
completion of the prompt (the sum of its tokens' log-probabilities, end-of-sequence included, in one
batched forward; or their mean, `scoring="mean"`, see SCORINGS), for any (model, tokenizer);
`sample_index` turns scores into a choice the same way at inference and in GRPO's legal rollout;
`load_policy` loads a checkpoint folder or a hub id.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from mtmc.protocols import PlanState, StepRecord
from mtmc.strategies import Strategy
from mtmc.tasks import TaskSummary

PROMPT_END = "next:"
# FLOP per compulsory byte above which the prompt calls a task compute-bound: the fp32 ridge of an
# H100 is ~15 (the heuristic planner uses the same 20 for its matmul recipe).
COMPUTE_BOUND_INTENSITY = 20.0
# How a completion's token log-probabilities become its score. "sum" is the completion's likelihood, so
# every extra token costs: `stop` (one token and the eos) outranks a five-token `tile ...` that the model
# rates as likely per token. "mean" (length-normalised) compares the steps per token instead.
SCORINGS = ("sum", "mean")


def checked_scoring(scoring: str) -> str:
    """`scoring` if it names one of SCORINGS, else ValueError (planner, rollout, continuation alike)."""
    if scoring not in SCORINGS:
        raise ValueError(f"scoring must be one of {SCORINGS}, got {scoring!r}")
    return scoring


class CheckpointError(ValueError):
    """The planner's checkpoint cannot be loaded; the message names it and says why."""


# ---------------------------------------------------------------------------------------------------
# the text the model sees (shared with training)


def render_prompt(summary: TaskSummary, history: Sequence[StepRecord], steps_left: int,
                  floor_share: float | None = None) -> str:
    """The planner's view of a state as plain text: what the task computes, what was tried, how close
    the current program is to the hardware's floor, the budget.

    Numbers are rounded to one significant digit (`4e+06`) so that tasks of similar size read the
    same: the planner should decide from the regime, not memorize exact sizes. The task's name is
    left out on purpose: evaluation tasks are never seen in training, names would not transfer.
    `floor_share` is the current program's share of the roofline floor (Verdict.roofline_fraction;
    `-` untimed): at ~1.0 nothing is left to win, the strongest reason to stop.

    One line per finished step. A rejected step whose last attempt the verifier refused with a reason
    code (StepRecord.reason, Verdict.reason: `tf32_beyond_eager`) ends in `reason <code>`, so the
    planner can react to the cause; every other step's line is as it was before reasons were shown.
    """
    bound = "compute" if summary.intensity >= COMPUTE_BOUND_INTENSITY else "memory"
    lines = [
        "ops " + " ".join(f"{op}x{count}" for op, count in summary.ops.items()),
        "inputs " + " ".join(_tensor(t.dtype, t.shape) for t in summary.inputs),
        "outputs " + " ".join(_tensor(t.dtype, t.shape) for t in summary.outputs),
        f"flops {summary.flops:.0e} bytes {summary.bytes_min:.0e} intensity {summary.intensity:.2g} "
        f"bound {bound}",
        "history" if history else "history none",
    ]
    for record in history:
        speedup = "-" if record.speedup is None else f"{record.speedup:.2f}x"
        verdict = "accepted" if record.accepted else "rejected"
        reason = f" reason {record.reason}" if record.reason and not record.accepted else ""
        lines.append(f"step {record.index} {record.strategy} status {record.status} {verdict} "
                     f"speedup {speedup}{reason}")
    floor = "-" if floor_share is None else f"{floor_share:.2f}"
    lines += [f"floor {floor}", f"steps_left {steps_left}", PROMPT_END]
    return "\n".join(lines)


def state_prompt(state: PlanState) -> str:
    """`render_prompt` of a live state (what LMPlanner shows its model)."""
    floor = state.verdict.roofline_fraction if state.verdict is not None else None
    return render_prompt(state.summary, state.history, state.steps_left, floor)


def completion_text(strategy: Strategy | str) -> str:
    """The completion the model is trained on and scored by: the canonical text after one space (so
    a BPE tokenizer sees the word boundary it saw in pretraining, and the prompt ends on a token)."""
    return " " + str(strategy)


def _tensor(dtype: str, shape: Sequence[int]) -> str:
    return f"{dtype}[{'x'.join(map(str, shape))}]"


# ---------------------------------------------------------------------------------------------------
# loading


def load_policy(checkpoint: str | Path, device: str = "auto") -> tuple[Any, Any]:
    """(model in eval mode on `device`, tokenizer) from a local folder or a hub id.

    Raises CheckpointError naming the checkpoint when it cannot be loaded, instead of the long
    chain of hub lookups transformers reports for a mistyped folder.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    ref = str(checkpoint)
    path = Path(ref).expanduser()
    if path.is_dir():
        ref = str(path)
        if not (path / "config.json").is_file():
            raise CheckpointError(f"{path}: not a model folder (no config.json); a checkpoint written by "
                                  "`mtmc train` is <out>/checkpoint")
    elif ref.startswith(("/", ".", "~")):  # a path, not a hub id: do not ask the hub about it
        raise CheckpointError(f"{ref}: no such checkpoint folder")
    try:
        tokenizer = AutoTokenizer.from_pretrained(ref)
        model = AutoModelForCausalLM.from_pretrained(ref)
    except (OSError, ValueError) as err:  # missing files, unknown hub id, no network
        first_line = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise CheckpointError(f"{ref}: cannot load the planner checkpoint: {first_line}") from err
    if tokenizer.eos_token is None:
        raise CheckpointError(f"{ref}: the tokenizer has no eos_token; completions are scored up to it")
    return model.to(resolve_device(device)).eval(), tokenizer


def resolve_device(device: str) -> str:
    return ("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device


def sample_index(rng: random.Random, scores: Sequence[float], temperature: float) -> int:
    """Argmax (first on ties) at temperature 0, else a draw from softmax(scores / temperature).
    Shared with GRPO's legal rollout, so training samples steps the way the planner does."""
    if temperature == 0:
        return max(range(len(scores)), key=lambda i: scores[i])
    top = max(scores)
    weights = [math.exp((s - top) / temperature) for s in scores]
    return rng.choices(range(len(scores)), weights=weights)[0]


@dataclass
class ScoredCompletion:
    """One completion of a prompt as the model scores it: `prompt_ids + completion_ids` is the row
    `tokenize_completions` makes, `logprobs[j]` is log p(completion_ids[j] | everything before it)."""

    prompt_ids: list[int]
    completion_ids: list[int]  # the completion's tokens, eos last
    logprobs: torch.Tensor  # float32, one per completion token; differentiable unless under no_grad

    @property
    def score(self) -> float:
        """log p(completion + eos | prompt): what LMPlanner ranks the legal steps by (scoring="sum")."""
        return self.logprobs.sum().item()

    @property
    def mean_score(self) -> float:
        """The mean log-probability per token, eos included (scoring="mean")."""
        return self.logprobs.mean().item()

    def scored(self, scoring: str) -> float:
        return self.score if checked_scoring(scoring) == "sum" else self.mean_score


def score_completions(model: Any, tokenizer: Any, prompt: str,
                      completions: Sequence[str]) -> list[ScoredCompletion]:
    """Every completion (+ eos) of `prompt`, tokenized as SFT tokenizes it, scored in one batched forward.

    Any (model, tokenizer) pair: LMPlanner's, or the policy inside GRPO's trainer. No `no_grad` here,
    so that a caller may differentiate through the log-probabilities; inference wraps it in one.
    """
    rows, starts = tokenize_completions(tokenizer, prompt, completions)
    width = max(len(r) for r in rows)
    # padded positions are masked and never scored, so any id will do (base models often have no pad)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    device = model.device
    # right padding: causal attention never lets a real position see the padding after it
    input_ids = torch.tensor([r + [pad] * (width - len(r)) for r in rows], device=device)
    attention = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows], device=device)
    logits = model(input_ids=input_ids, attention_mask=attention).logits.float()
    # position t predicts token t + 1; only the completions' positions are normalised (from the
    # earliest start on): the prompt's many positions are never scored
    first = min(starts) - 1
    scored = logits[:, first:-1].log_softmax(-1)
    token_logprobs = scored.gather(-1, input_ids[:, first + 1:, None]).squeeze(-1)
    return [ScoredCompletion(prompt_ids=row[:start], completion_ids=row[start:],
                             logprobs=token_logprobs[i, start - 1 - first:len(row) - 1 - first])
            for i, (row, start) in enumerate(zip(rows, starts, strict=True))]


def tokenize_completions(tokenizer: Any, prompt: str,
                         completions: Sequence[str]) -> tuple[list[list[int]], list[int]]:
    """Token ids of prompt + completion + eos for each completion, and where each completion starts.

    Tokenized the way TRL's SFTTrainer tokenizes a prompt-completion example (the prompt alone, then
    prompt + completion + eos as one text; the completion starts where the two diverge), so the
    scored tokens are exactly the tokens SFT trained on.
    """
    # one call for the prompt and every row: a batch gives each text the ids it gets alone, without
    # the tokenizer's per-call overhead (a fifth of the time a tiny model takes to score a menu)
    texts = [prompt] + [prompt + c + tokenizer.eos_token for c in completions]
    prompt_ids, *rows = tokenizer(texts)["input_ids"]
    starts = [max(1, common_prefix(prompt_ids, row)) for row in rows]
    return rows, starts


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    shorter = min(len(a), len(b))
    if a[:shorter] == b[:shorter]:  # the usual case, the prompt's ids start the row: one comparison
        return shorter
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n
