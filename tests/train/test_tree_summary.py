"""A tree GRPO run's numbers: the first and last 10% of its steps' returns, and its throughput."""

from __future__ import annotations

import pytest

from mtmc.train.tree_summary import grpo_summary, summary_line, window_means


def history(returns, zero_std=None):
    zero_std = zero_std or [0.0] * len(returns)
    steps = [{"step": i + 1, "reward": r, "frac_reward_zero_std": z, "loss": 0.0}
             for i, (r, z) in enumerate(zip(returns, zero_std, strict=True))]
    return steps + [{"step": len(returns), "train_runtime": 9.0}]  # TRL's end-of-run entry: no step


def test_the_windows_are_the_first_and_last_tenth_and_never_empty():
    assert window_means([float(v) for v in range(20)]) == (0.5, 18.5)  # 2 steps each
    assert window_means([1.0, 2.0, 3.0]) == (1.0, 3.0)  # a short run: one step each
    with pytest.raises(ValueError, match="no values"):
        window_means([])


def test_the_summary_counts_episodes_per_minute_and_the_returns_rise():
    returns = [-1.0] * 5 + [0.0] * 40 + [0.5] * 5
    summary = grpo_summary(history(returns, [1.0] * 25 + [0.0] * 25), episodes=3200, played=1000,
                           grpo_s=120.0, states_per_step=8)
    assert (summary["steps"], summary["logged_steps"], summary["states_per_step"]) == (50, 50, 8)
    assert summary["episodes_per_min"] == 1600.0
    assert (summary["return_first"], summary["return_last"], summary["return_rise"]) == (-1.0, 0.5, 1.5)
    assert summary["frac_reward_zero_std"] == 0.5
    assert "1600 episodes/min" in summary_line(summary) and "last 10% +0.5000" in summary_line(summary)


def test_a_history_without_rewards_is_an_error_not_a_zero():
    with pytest.raises(ValueError, match="no step with a reward"):
        grpo_summary([{"step": 1, "train_runtime": 1.0}], episodes=0, played=0, grpo_s=1.0, states_per_step=1)
