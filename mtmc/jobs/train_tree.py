"""`mtmc train stage=grpo env=tree tree=<file>`: multi-step GRPO offline on a recorded tree.

    tree -> train-split tasks -> TreeEnv -> states (random-planner episodes)
      -> [stage=both: SFT on the heuristic planner's episodes (prompt = each state, completion = its step)]
      -> GRPO, each sampled step rewarded with its return-to-go (tree_env.credit=step: its own reward),
         the rollout and the greedy continuation ranking steps by planner.scoring, as the eval planner
         does (mtmc/train/tree_grpo.py) -> <out>/checkpoint -> train curves
      -> grpo_summary.json: episodes/min, wall times, the mean return's first and last 10% of steps
         (mtmc/train/tree_summary.py)
      -> eval: the tree report (mtmc/tree/report.py) of the trained planner and the baselines on the
         tree's eval-split tasks, offline
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from mtmc.jobs.tree import REPORT_JSON, REPORT_MD, build_planners
from mtmc.report import write_atomic
from mtmc.tasks import Task, TaskError, load_suite
from mtmc.train.curves import write_curves
from mtmc.tree import Tree, TreeEnv, load_tree, task_fingerprint
from mtmc.tree.report import headroom, report_markdown

log = logging.getLogger(__name__)
CHECKPOINT = "checkpoint"
TREE_STAGES = ("grpo", "both")  # both: an SFT warm start on the heuristic planner's episodes, then GRPO


def train_on_tree(cfg: DictConfig, out_dir: Path) -> dict[str, Any]:
    from trl import GRPOConfig

    from mtmc.jobs.train import build_model, sft_stage
    from mtmc.train.tree_grpo import (
        CREDITS,
        TreeReturn,
        heuristic_examples,
        legal_by_prompt,
        train_tree_grpo,
        tree_states,
    )
    from planners.heuristic import HeuristicPlanner
    from planners.random import RandomPlanner

    started = time.perf_counter()
    if cfg.stage not in TREE_STAGES:
        raise SystemExit(f"mtmc train: env=tree trains stage=grpo or both (SFT on the heuristic's episodes, "
                         f"then GRPO), not {cfg.stage} (SFT alone learns from recorded runs: env=runs)")
    credit = OmegaConf.select(cfg, "tree_env.credit", default="return_to_go")
    if credit not in CREDITS:
        raise SystemExit(f"mtmc train: tree_env.credit={credit}: use one of {', '.join(CREDITS)}")
    tree, train, evaluate_on = split_tree(cfg)
    knobs = cfg.tree_env
    env = TreeEnv(tree, train, max_steps=knobs.max_steps, max_retries=knobs.max_retries,
                  call_cost=knobs.call_cost)
    states = tree_states(env, [RandomPlanner(seed=s) for s in range(knobs.behaviour_episodes)])
    legal = legal_by_prompt(env, states)
    examples = heuristic_examples(env, HeuristicPlanner()) if cfg.stage == "both" else []
    log.info("%d train tasks of %s: %d SFT examples, %d GRPO states", len(train), cfg.tree, len(examples),
             len(states))
    words = [s["prompt"] for s in states] + [text for texts in legal.values() for text in texts]
    words += [e["prompt"] + e["completion"] for e in examples]
    model, tokenizer = build_model(cfg, words)
    logs = {"sft": sft_stage(cfg, model, tokenizer, examples, out_dir)} if examples else {}
    args = GRPOConfig(output_dir=str(out_dir / "grpo"), **OmegaConf.to_container(cfg.grpo, resolve=True))
    scoring = cfg.planner.scoring  # the eval planner's: training ranks the steps the way it will
    reward = TreeReturn(env, model, tokenizer, rejected=instantiate(cfg.reward).rejected,
                        credit=credit, scoring=scoring)
    grpo_started = time.perf_counter()
    history = train_tree_grpo(model, tokenizer, states, reward, args, scoring=scoring)
    grpo_s = time.perf_counter() - grpo_started
    checkpoint = out_dir / CHECKPOINT
    model.save_pretrained(checkpoint)
    tokenizer.save_pretrained(checkpoint)
    log.info("planner checkpoint: planner=lm planner.checkpoint=%s", checkpoint)
    write_curves(out_dir, logs | {"grpo": history})
    report = None
    if cfg.eval.enabled and evaluate_on:
        report = evaluate(cfg, tree, evaluate_on, checkpoint, out_dir)
    summary = write_summary(cfg, out_dir, history, reward, args, grpo_s=grpo_s,
                            job_s=time.perf_counter() - started)
    return {"checkpoint": str(checkpoint), "train_tasks": len(train), "sft_examples": len(examples),
            "grpo_states": len(states), "episodes": reward.episodes, "played": reward.played,
            "summary": summary, "eval": report}


def write_summary(cfg: DictConfig, out_dir: Path, history: list[dict], reward: Any, args: Any, *,
                  grpo_s: float, job_s: float) -> dict:
    """<out>/grpo_summary.json: the run's throughput and return (tree_summary.py) and what it ran with.
    `job_s` runs from the job's start (after the imports and Hydra, ~10 s on a 2-core CPU) to the end
    of the eval."""
    from mtmc.train.tree_summary import SUMMARY_JSON, grpo_summary, summary_line

    per_step = args.per_device_train_batch_size * args.gradient_accumulation_steps * args.world_size
    summary = grpo_summary(history, episodes=reward.episodes, played=reward.played, grpo_s=grpo_s,
                           states_per_step=per_step // args.num_generations)
    summary |= {"job_s": round(job_s, 2), "tree": str(cfg.tree), "seed": cfg.seed, "model": str(cfg.model),
                "num_generations": args.num_generations, "learning_rate": args.learning_rate,
                "episode_max_steps": cfg.tree_env.max_steps, "call_cost": cfg.tree_env.call_cost,
                "stage": str(cfg.stage), "credit": reward.credit, "scoring": str(cfg.planner.scoring)}
    write_atomic(out_dir / SUMMARY_JSON, json.dumps(summary, indent=2) + "\n")
    log.info(summary_line(summary))
    return summary


def split_tree(cfg: DictConfig) -> tuple[Tree, list[Task], list[Task]]:
    """The tree, and the suite's tasks it holds (as they are now): train split, eval split."""
    if not cfg.tree:
        raise SystemExit("mtmc train: env=tree needs tree=<a file mtmc tree record wrote>")
    try:
        tree = load_tree(cfg.tree)
        tasks = [t for t in load_suite(cfg.suite) if tree.task_sha.get(t.name) == task_fingerprint(t)]
    except (FileNotFoundError, ValueError, TaskError) as err:
        raise SystemExit(f"mtmc train: {err}") from None
    train = [t for t in tasks if t.split == "train"]
    if not train:
        raise SystemExit(f"mtmc train: {cfg.tree} holds no train-split task of suite={cfg.suite}")
    return tree, train, [t for t in tasks if t.split == "eval"]


def evaluate(cfg: DictConfig, tree: Tree, tasks: list[Task], checkpoint: Path, out_dir: Path) -> dict:
    """The tree report on the eval-split tasks: the trained planner against the baselines."""
    lm = OmegaConf.to_container(cfg.planner, resolve=True) | {"checkpoint": str(checkpoint)}
    # the trained planner once (its seed matters only when it samples); seeded baselines once per seed
    planners = {"lm": [instantiate(lm)], **build_planners(cfg.eval.baselines, cfg.tree_env.eval_seeds)}
    report = headroom(tree, tasks, planners, max_steps=cfg.tree_env.max_steps,
                      max_retries=cfg.tree_env.max_retries)
    markdown = report_markdown(report)
    (out_dir / "eval").mkdir(parents=True, exist_ok=True)
    write_atomic(out_dir / "eval" / REPORT_MD, markdown)
    write_atomic(out_dir / "eval" / REPORT_JSON, json.dumps(report, indent=2) + "\n")
    print(markdown)
    return report["splits"]
