"""What a GRPO run on a tree did, in numbers: throughput, and whether the return rose.

    summary = grpo_summary(trainer.state.log_history, episodes=reward.episodes, played=reward.played,
                           grpo_s=..., states_per_step=8)
    -> {"steps": 400, "episodes": 25600, "episodes_per_min": 9100.0, "return_first": -0.21,
        "return_last": -0.05, "return_rise": 0.16, "frac_reward_zero_std": 0.12, ...}

The return of a step is TRL's logged `reward`: the mean, over the step's completions, of each sampled
step's return-to-go (mtmc/train/tree_grpo.py). `return_first` / `return_last` are its means over the
first and the last 10% of the logged steps (at least one step each), so a run's rise can be set
against the spread over seeds (benchmarks/tree_rl.py). `frac_reward_zero_std` is TRL's own: the share
of completions whose group's returns were all equal (no learning signal), averaged over the steps.
Under `tree_env.credit=step` the logged reward is each sampled step's own reward, not a return-to-go:
its means are per step, so runs of different credit are compared by their eval (the tree report).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import fmean

SHARE = 0.1  # the first and last 10% of the steps
SUMMARY_JSON = "grpo_summary.json"


def window_means(values: Sequence[float], share: float = SHARE) -> tuple[float, float]:
    """The mean of the first and of the last `share` of `values` (at least one value each)."""
    if not values:
        raise ValueError("window_means: no values")
    width = max(1, round(len(values) * share))
    return fmean(values[:width]), fmean(values[-width:])


def grpo_summary(history: Sequence[dict], *, episodes: int, played: int, grpo_s: float,
                 states_per_step: int) -> dict:
    """The run's numbers from TRL's log history (its per-step entries) and the reward's counters."""
    steps = [entry for entry in history if "reward" in entry]
    if not steps:
        raise ValueError("grpo_summary: the log history has no step with a reward (logging_steps?)")
    returns = [entry["reward"] for entry in steps]
    first, last = window_means(returns)
    zero_std = [entry["frac_reward_zero_std"] for entry in steps if "frac_reward_zero_std" in entry]
    return {
        "steps": steps[-1]["step"], "logged_steps": len(steps), "states_per_step": states_per_step,
        "episodes": episodes, "played": played, "grpo_s": round(grpo_s, 2),
        "episodes_per_min": round(episodes / grpo_s * 60, 1) if grpo_s > 0 else math.nan,
        "return_first": first, "return_last": last, "return_rise": last - first,
        "frac_reward_zero_std": fmean(zero_std) if zero_std else None,
    }


def summary_line(summary: dict) -> str:
    """One log line: throughput, then the return's first and last 10%."""
    zero, states = summary["frac_reward_zero_std"], summary["states_per_step"]
    return (f"GRPO: {summary['steps']} steps ({states} state{'s' if states != 1 else ''} each), "
            f"{summary['episodes']} episodes ({summary['played']} played) in {summary['grpo_s']:.1f} s = "
            f"{summary['episodes_per_min']:.0f} episodes/min; mean return first 10% "
            f"{summary['return_first']:+.4f}, last 10% {summary['return_last']:+.4f}; frac_reward_zero_std "
            + ("n/a" if zero is None else f"{zero:.2f}"))
