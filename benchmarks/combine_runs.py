"""Combine `mtmc bench` runs of the same suite: a later run's row for a task replaces an earlier one.

    R=../mtmc-results/benchmarks/results  # a worktree of the results branch (BENCHMARKS.md)
    python benchmarks/combine_runs.py $R/2026-11-24-h200-bench-suite3/results.json \
        $R/2026-11-24-h200-bench-suite4/results.json $R/2026-11-24-h200-bench-suite5/results.json

Prints the issue-5 aggregates of the combined table: correct tasks, geomean speedups over eager and
torch.compile, and the memory-bound tasks at 85% or more of the measured copy bandwidth.
"""

import json
import sys

from mtmc.bench.metrics import geomean


def combine(paths: list[str]) -> dict[str, dict]:
    rows: dict[str, dict] = {}
    for path in paths:
        rows.update({row["task"]: row for row in json.load(open(path))["tasks"]})
    return rows


def main() -> None:
    rows = combine(sys.argv[1:])
    correct = [r for r in rows.values() if r["correct"]]
    memory = [r for r in correct if r["bound"] == "memory"]
    under = sorted((r["roofline_pct"], r["task"]) for r in memory if r["roofline_pct"] < 85)
    print(f"tasks {len(rows)}, correct {len(correct)}")
    print(f"geomean over eager {geomean([r['speedup_eager'] for r in correct]):.3f}x, "
          f"over torch.compile {geomean([r['speedup_compiled'] for r in correct]):.3f}x")
    print(f"memory-bound at >= 85% of copy bandwidth: {len(memory) - len(under)} of {len(memory)}")
    for pct, task in under:
        print(f"  under: {task} {pct:.1f}%")


if __name__ == "__main__":
    main()
