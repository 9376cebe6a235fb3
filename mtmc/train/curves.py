"""Training curves: the trainers' log history as a CSV, and a plot of the SFT loss and the GRPO reward.

    write_curves(out_dir, {"sft": sft_log_history, "grpo": grpo_log_history})
    -> train_log.csv (one row per logged step: stage, step, and every number the trainer logged)
       train_curves.png (SFT loss per step; GRPO mean reward per step, with its spread)
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping, Sequence
from pathlib import Path

from mtmc.report import write_atomic

LOG_CSV = "train_log.csv"
CURVES_PNG = "train_curves.png"


def write_curves(out_dir: Path, logs: Mapping[str, Sequence[dict]]) -> list[dict]:
    rows = [{"stage": stage, **entry} for stage, history in logs.items() for entry in history
            if "train_runtime" not in entry]  # the trainers' end-of-run summary is not a step
    write_atomic(out_dir / LOG_CSV, rows_csv(rows))
    plot_curves(out_dir / CURVES_PNG, rows)
    return rows


def rows_csv(rows: Sequence[dict]) -> str:
    columns = ["stage", "step"] + sorted({key for row in rows for key in row} - {"stage", "step"})
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def plot_curves(path: Path, rows: Sequence[dict]) -> None:
    # Figure without pyplot: no global backend state (as mtmc/report.py).
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.5), layout="constrained")
    loss_ax, reward_ax = fig.subplots(1, 2)
    sft = [(r["step"], r["loss"]) for r in rows if r["stage"] == "sft" and "loss" in r]
    if sft:
        loss_ax.plot(*zip(*sft, strict=True), marker=".")
    loss_ax.set(title="SFT loss (completion tokens)", xlabel="step", ylabel="loss")
    grpo = [(r["step"], r["reward"], r.get("reward_std", 0.0)) for r in rows
            if r["stage"] == "grpo" and "reward" in r]
    if grpo:
        steps, means, spreads = zip(*grpo, strict=True)
        reward_ax.plot(steps, means, marker=".")
        reward_ax.fill_between(steps, [m - s for m, s in zip(means, spreads, strict=True)],
                               [m + s for m, s in zip(means, spreads, strict=True)], alpha=0.2)
    reward_ax.set(title="GRPO mean step reward (band: std over the batch)", xlabel="step", ylabel="reward")
    fig.savefig(path, dpi=100)
