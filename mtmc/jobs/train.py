"""`mtmc train`: learn the LM planner from recorded optimize runs, save it, compare it on eval tasks.

    recorded runs -> SFT examples / GRPO plan states -> model (tiny or a checkpoint)
      -> SFT and/or GRPO (grpo_rollout: sampling among the legal steps, or free generation)
      -> <out>/checkpoint -> train_log.csv + train_curves.png -> eval.{csv,md}
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from mtmc.bench import select_tasks, visible_gpus
from mtmc.budgets import Budgets
from mtmc.lm_policy import CheckpointError, load_policy
from mtmc.tasks import TaskError, load_suite
from mtmc.train.curves import write_curves
from mtmc.train.data import DataError, RecordedRun, load_runs, plan_states, sft_examples

log = logging.getLogger(__name__)

STAGES = {"sft": ("sft",), "grpo": ("grpo",), "both": ("sft", "grpo")}
CHECKPOINT = "checkpoint"


def run(cfg: DictConfig) -> dict[str, Any]:
    if cfg.stage not in STAGES:
        raise SystemExit(f"mtmc train: stage={cfg.stage}: use one of {', '.join(STAGES)}")
    if "grpo" in STAGES[cfg.stage]:
        from mtmc.train.grpo import ROLLOUTS

        if cfg.grpo_rollout not in ROLLOUTS:
            raise SystemExit(f"mtmc train: grpo_rollout={cfg.grpo_rollout}: use one of {', '.join(ROLLOUTS)}")
    out_dir = Path(HydraConfig.get().runtime.output_dir)
    if (out_dir / CHECKPOINT).exists():
        # Its eval folders would be taken as finished results of the new checkpoint.
        raise SystemExit(f"mtmc train: {out_dir} already holds a trained planner; choose a fresh out= folder")
    if cfg.env == "tree":
        from mtmc.jobs.train_tree import train_on_tree

        return train_on_tree(cfg, out_dir)
    if cfg.env != "runs":
        raise SystemExit(f"mtmc train: env={cfg.env}: use runs or tree")
    try:
        runs = load_runs(list(cfg.data or []), cfg.suite)
        examples = sft_examples(runs) if "sft" in STAGES[cfg.stage] else []
    except (DataError, TaskError) as err:
        raise SystemExit(f"mtmc train: {err}") from None
    states = plan_states(runs) if "grpo" in STAGES[cfg.stage] else []
    log.info("%d runs: %d SFT examples, %d GRPO states", len(runs), len(examples), len(states))

    coder = None
    if states:
        log.info("Instantiating coder <%s>", cfg.coder._target_)
        coder = instantiate(cfg.coder)

    # the tiny model's vocabulary: everything it will read, and every strategy it could be asked to write
    texts = [e["prompt"] + e["completion"] for e in examples] + [s["prompt"] for s in states]
    texts += [r["strategy"] for run in runs for r in run.steps]
    if states and cfg.model == "tiny":
        texts += legal_texts(states, coder, runs)  # GRPO's steps, recorded or not, must read as words
    model, tokenizer = build_model(cfg, texts)
    logs: dict[str, list[dict]] = {}
    if examples:
        logs["sft"] = sft_stage(cfg, model, tokenizer, examples, out_dir)
    if states:
        logs["grpo"] = grpo_stage(cfg, model, tokenizer, states, runs, coder, out_dir)

    checkpoint = out_dir / CHECKPOINT
    model.save_pretrained(checkpoint)
    tokenizer.save_pretrained(checkpoint)
    log.info("planner checkpoint: planner=lm planner.checkpoint=%s", checkpoint)
    write_curves(out_dir, logs)
    table = evaluate(cfg, checkpoint, out_dir) if cfg.eval.enabled else None
    return {"checkpoint": str(checkpoint), "runs": len(runs), "sft_examples": len(examples),
            "grpo_states": len(states), "eval": table}


def build_model(cfg: DictConfig, texts: list[str]) -> tuple[Any, Any]:
    if cfg.model == "tiny":
        from mtmc.train.tiny import build_tiny

        return build_tiny(texts, seed=cfg.seed)
    try:
        return load_policy(cfg.model)
    except CheckpointError as err:
        raise SystemExit(f"mtmc train: {err}") from None


def legal_texts(states: list[dict], coder: Any, runs: list[RecordedRun]) -> list[str]:
    """Every strategy legal in some GRPO state: a word-level vocabulary without them would read an
    unrecorded step such as `tile BLOCK=256` as `tile <unk>`, the same as any other tile size."""
    from mtmc.train.grpo import legal_steps

    tasks = {run.task.name: run.task for run in runs}
    return [text for steps in legal_steps(states, coder, tasks).values() for text in steps]


def sft_stage(cfg: DictConfig, model: Any, tokenizer: Any, examples: list[dict], out_dir: Path) -> list[dict]:
    from trl import SFTConfig

    from mtmc.train.sft import train_sft, underfit_warning

    args = SFTConfig(output_dir=str(out_dir / "sft"), **OmegaConf.to_container(cfg.sft, resolve=True))
    history = train_sft(model, tokenizer, examples, args)
    if warning := underfit_warning(history):
        log.warning(warning)
    return history


def grpo_stage(cfg: DictConfig, model: Any, tokenizer: Any, states: list[dict], runs: list[RecordedRun],
               coder: Any, out_dir: Path) -> list[dict]:
    from trl import GRPOConfig

    from mtmc.train.grpo import StepReward, train_grpo

    args = GRPOConfig(output_dir=str(out_dir / "grpo"), **OmegaConf.to_container(cfg.grpo, resolve=True))
    log.info("Instantiating verifier <%s>", cfg.verifier._target_)
    with instantiate(cfg.verifier) as verifier:
        tasks = {run.task.name: run.task for run in runs}
        reward = StepReward(coder, verifier, tasks, instantiate(cfg.reward))
        history = train_grpo(model, tokenizer, states, reward, args, rollout=cfg.grpo_rollout,
                             scoring=cfg.planner.get("scoring", "sum"))  # ranked as the eval planner ranks
    log.info("GRPO: %d verifier calls", reward.verifier_calls)
    return history


def evaluate(cfg: DictConfig, checkpoint: Path, out_dir: Path) -> list[dict]:
    from mtmc.train.evaluate import evaluate_planners

    try:
        tasks = select_tasks(load_suite(cfg.eval.suite), cfg.eval.tasks, split="eval")
    except TaskError as err:
        raise SystemExit(f"mtmc train: eval: {err}") from None
    if not tasks:
        raise SystemExit(f"mtmc train: eval: no eval-split task in suite={cfg.eval.suite} "
                         f"tasks={cfg.eval.tasks}")
    lm = OmegaConf.to_container(cfg.planner, resolve=True) | {"checkpoint": str(checkpoint)}
    planners = {"lm": lm, **OmegaConf.to_container(cfg.eval.baselines, resolve=True)}
    roles = {role: OmegaConf.to_container(cfg[role], resolve=True) for role in ("coder", "verifier")}
    table = evaluate_planners(tasks, out_dir / "eval", planners=planners, roles=roles,
                              budgets=Budgets.from_config(cfg.eval),
                              reward=OmegaConf.to_container(cfg.reward, resolve=True),
                              gpus=visible_gpus(cfg.eval.gpus))
    print((out_dir / "eval" / "eval.md").read_text())
    return table
