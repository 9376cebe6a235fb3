"""benchmarks/tree_rl.py: tree GRPO runs side by side, and whether the return rose by more than the
spread over seeds."""

from __future__ import annotations

import json

import pytest

from benchmarks.tree_rl import load, markdown, rise_and_spread


def run_folder(tmp_path, name, first, last, seed=0, zero_std=0.25):
    folder = tmp_path / name
    folder.mkdir()
    summary = {"steps": 100, "states_per_step": 8, "episodes": 6400, "played": 2000, "grpo_s": 300.0,
               "job_s": 320.0, "episodes_per_min": 1280.0, "return_first": first, "return_last": last,
               "return_rise": last - first, "frac_reward_zero_std": zero_std, "seed": seed}
    (folder / "grpo_summary.json").write_text(json.dumps(summary))
    return folder


def test_a_rise_larger_than_the_seeds_spread_clears_it(tmp_path):
    runs = [load(run_folder(tmp_path, f"s{s}", first, last, s))
            for s, (first, last) in enumerate([(-0.2, 0.1), (-0.1, 0.2), (-0.15, 0.15)])]
    verdict = rise_and_spread(runs)
    assert verdict["rise"] == pytest.approx(0.3) and verdict["spread"] == pytest.approx(0.1)
    assert verdict["clears"]
    text = markdown(runs)
    row = "| s1 | 1 | - | 100 | 8 | 6400 | 2000 | 300.0 | 320.0 | 1280 | -0.1000 | +0.2000 | +0.3000 | 0.25 |"
    assert row in text
    assert "the rise clears the spread: yes" in text and "nothing was learnt" not in text


def test_a_rise_within_the_spread_does_not(tmp_path):
    # one seed ends far above the others: the runs' mean rises, but the seeds disagree by more
    runs = [load(run_folder(tmp_path, f"s{s}", first, last, s))
            for s, (first, last) in enumerate([(0.0, 0.0), (0.0, 0.05), (0.0, 0.6)])]
    verdict = rise_and_spread(runs)
    assert verdict["rise"] == pytest.approx(0.2166, abs=1e-3) and not verdict["clears"]
    assert "the rise clears the spread: no" in markdown(runs)


def test_a_run_names_its_ablation_arm(tmp_path):
    folder = run_folder(tmp_path, "abl", 0.0, 0.1)
    summary = json.loads((folder / "grpo_summary.json").read_text())
    summary |= {"stage": "both", "credit": "step", "scoring": "mean"}
    (folder / "grpo_summary.json").write_text(json.dumps(summary))
    assert "| abl | 0 | both/step/mean | 100 |" in markdown([load(folder)])


def test_one_run_has_no_spread_and_a_folder_without_a_summary_is_named(tmp_path):
    assert "one run, so no spread" in markdown([load(run_folder(tmp_path, "only", 0.0, 0.1))])
    with pytest.raises(SystemExit, match="empty.*no grpo_summary.json"):
        load(tmp_path / "empty")


def test_runs_whose_groups_never_differed_are_said_to_have_learnt_nothing(tmp_path):
    # a tree whose states offer one step each: every group's returns are equal, whatever the rise
    runs = [load(run_folder(tmp_path, f"s{s}", -0.02, 0.0, s, zero_std=1.0)) for s in range(3)]
    assert "nothing was learnt" in markdown(runs)
