"""Several `mtmc train stage=grpo env=tree` runs side by side (seeds of one setting, or the arms of an
ablation): one markdown row per run folder from its grpo_summary.json, then whether the return rose by
more than the spread over the runs.

    for s in 0 1 2; do mtmc train stage=grpo env=tree tree=<file> model=tiny seed=$s out=runs/rl/s$s; done
    python benchmarks/tree_rl.py runs/rl/s0 runs/rl/s1 runs/rl/s2

The target (issue Show 4): the mean return of the last 10% of steps exceeds that of the first 10% by
more than the spread over 3 seeds. Here the rise is the runs' mean of (last 10% - first 10%), and the
spread is the larger of the two ranges (max - min over the runs) of the first-10% and the last-10%
means: a rise that clears how much the seeds differ at either end.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from statistics import fmean

SUMMARY_JSON = "grpo_summary.json"  # as mtmc/train/tree_summary.py writes it
NO_SIGNAL = 0.999  # frac_reward_zero_std from which no group of a run had a learning signal
COLUMNS = ("run", "seed", "arm", "steps", "states/step", "episodes", "played", "GRPO s", "job s",
           "episodes/min", "return first 10%", "return last 10%", "rise", "frac_reward_zero_std")


def load(folder: str | Path) -> dict:
    path = Path(folder) / SUMMARY_JSON
    if not path.is_file():
        raise SystemExit(f"{path}: no {SUMMARY_JSON} (a run of `mtmc train stage=grpo env=tree` writes one)")
    return {"run": Path(folder).name, **json.loads(path.read_text())}


def rise_and_spread(runs: list[dict]) -> dict:
    """The mean rise over the runs, the spread over them (None for one run), and whether it clears it."""
    rise = fmean(r["return_last"] - r["return_first"] for r in runs)
    if len(runs) < 2:
        return {"rise": rise, "spread": None, "clears": None}
    spread = max(_range([r["return_first"] for r in runs]), _range([r["return_last"] for r in runs]))
    return {"rise": rise, "spread": spread, "clears": rise > spread}


def _range(values: list[float]) -> float:
    return max(values) - min(values)


def arm(run: dict) -> str:
    """The run's ablation arm, stage/credit/scoring (docs/design.md); `-` for a summary that predates them.
    Under credit=step the logged reward is a step's own reward, not a return: compare arms by their eval."""
    keys = ("stage", "credit", "scoring")
    return "/".join(str(run[k]) for k in keys) if all(k in run for k in keys) else "-"


def row(run: dict) -> str:
    zero = run.get("frac_reward_zero_std")
    cells = [run["run"], run.get("seed", "-"), arm(run), run["steps"], run["states_per_step"],
             run["episodes"], run["played"], f"{run['grpo_s']:.1f}", f"{run['job_s']:.1f}",
             f"{run['episodes_per_min']:.0f}", f"{run['return_first']:+.4f}", f"{run['return_last']:+.4f}",
             f"{run['return_last'] - run['return_first']:+.4f}", "-" if zero is None else f"{zero:.2f}"]
    return "| " + " | ".join(str(c) for c in cells) + " |"


def markdown(runs: list[dict]) -> str:
    lines = ["| " + " | ".join(COLUMNS) + " |", "|---|" + "---:|" * (len(COLUMNS) - 1)]
    lines += [row(run) for run in runs]
    return "\n".join(lines) + "\n\n" + verdict_line(runs) + "\n"


def verdict_line(runs: list[dict]) -> str:
    verdict = rise_and_spread(runs)
    rise = f"{verdict['rise']:+.4f}"
    if verdict["spread"] is None:
        line = f"Rise (last 10% - first 10%): {rise}; one run, so no spread over seeds."
    else:
        line = (f"Mean rise (last 10% - first 10%) over {len(runs)} runs: {rise}; spread over the runs "
                f"(the larger range of the first-10% and last-10% means): {verdict['spread']:.4f}; the rise "
                f"clears the spread: {'yes' if verdict['clears'] else 'no'}.")
    if all((r.get("frac_reward_zero_std") or 0.0) >= NO_SIGNAL for r in runs):
        # GRPO's advantages were all zero: the return moved only with the states each step drew
        line += " No group's returns ever differed (frac_reward_zero_std 1.00): nothing was learnt."
    return line


def main(argv: list[str]) -> None:
    if not argv:
        raise SystemExit("usage: python benchmarks/tree_rl.py <run folder> [<run folder> ...]")
    print(markdown([load(folder) for folder in argv]), end="")


if __name__ == "__main__":
    main(sys.argv[1:])
