"""`mtmc train stage=grpo env=tree tree=<file>`: multi-step GRPO offline on a recorded tree.

    tree -> train-split tasks -> TreeEnv -> states (random-planner episodes) -> GRPO, each sampled step
      rewarded with its return-to-go (mtmc/train/tree_grpo.py) -> <out>/checkpoint -> train curves
      -> eval: the tree report (mtmc/tree/report.py) of the trained planner and the baselines on the
         tree's eval-split tasks, offline
"""

from __future__ import annotations

import json
import logging
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


def train_on_tree(cfg: DictConfig, out_dir: Path) -> dict[str, Any]:
    from trl import GRPOConfig

    from mtmc.jobs.train import build_model
    from mtmc.train.tree_grpo import TreeReturn, legal_by_prompt, train_tree_grpo, tree_states
    from planners.random import RandomPlanner

    if cfg.stage != "grpo":
        raise SystemExit(f"mtmc train: env=tree trains stage=grpo only, not {cfg.stage} (SFT learns from "
                         "recorded runs: env=runs data=...)")
    tree, train, evaluate_on = split_tree(cfg)
    knobs = cfg.tree_env
    env = TreeEnv(tree, train, max_steps=knobs.max_steps, max_retries=knobs.max_retries,
                  call_cost=knobs.call_cost)
    states = tree_states(env, [RandomPlanner(seed=s) for s in range(knobs.behaviour_episodes)])
    legal = legal_by_prompt(env, states)
    log.info("%d train tasks of %s: %d GRPO states", len(train), cfg.tree, len(states))
    words = [s["prompt"] for s in states] + [text for texts in legal.values() for text in texts]
    model, tokenizer = build_model(cfg, words)
    args = GRPOConfig(output_dir=str(out_dir / "grpo"), **OmegaConf.to_container(cfg.grpo, resolve=True))
    reward = TreeReturn(env, model, tokenizer, rejected=instantiate(cfg.reward).rejected)
    history = train_tree_grpo(model, tokenizer, states, reward, args)
    checkpoint = out_dir / CHECKPOINT
    model.save_pretrained(checkpoint)
    tokenizer.save_pretrained(checkpoint)
    log.info("planner checkpoint: planner=lm planner.checkpoint=%s (%d episodes rewarded, %d continuations "
             "played)", checkpoint, reward.episodes, reward.played)
    write_curves(out_dir, {"grpo": history})
    report = None
    if cfg.eval.enabled and evaluate_on:
        report = evaluate(cfg, tree, evaluate_on, checkpoint, out_dir)
    return {"checkpoint": str(checkpoint), "train_tasks": len(train), "grpo_states": len(states),
            "episodes": reward.episodes, "played": reward.played, "eval": report}


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
