"""Programs a minute and the median phases of a tree recording (issue 26 Show 1: >= 60 a minute on one
GPU), from the tree file and the `progress.txt` that benchmarks/tree_one_gpu.sh writes (a line
"<seconds since start> <node rows>" every 20 s; the rows themselves carry no clock). For several GPUs,
benchmarks/tree_gpus.sh writes STATE/call<k>/progress.txt, the node rows of all its recorders, and runs this.

    python3 benchmarks/tree_rate.py $S/tree/builtin.jsonl $S/progress.txt
    python3 benchmarks/tree_rate.py --whole-depth1 $S/tree/builtin.jsonl   # a,b,c: for `tasks=[...]`
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict


def rates(progress: str) -> list[str]:
    points = [tuple(map(float, line.split())) for line in open(progress) if len(line.split()) == 2]
    if len(points) < 2:
        return ["progress: fewer than two samples"]
    (t0, n0), (t1, n1) = points[0], points[-1]
    per_min = 60 * (n1 - n0) / (t1 - t0)
    lines = [f"whole run: {n1 - n0:.0f} programs in {t1 - t0:.0f} s = {per_min:.1f} a minute"]
    for span in (60, 180, 300):  # the last minutes: the rate once every task's reference is made
        if t1 - span <= t0:
            break
        start = next(((t, n) for t, n in points if t >= t1 - span), points[0])
        if t1 > start[0]:
            lines.append(f"last {t1 - start[0]:.0f} s: {60 * (n1 - start[1]) / (t1 - start[0]):.1f} a minute")
    return lines


def phases(tree: str) -> list[str]:
    nodes = [r for r in map(json.loads, open(tree)) if r.get("kind") == "node"]
    by_phase: dict[str, list[float]] = defaultdict(list)
    for row in nodes:
        for name, value in (row.get("phases_s") or {}).items():
            by_phase[name].append(value)
    statuses = defaultdict(int)
    for row in nodes:
        statuses[row["status"]] += 1
    lines = [f"{len(nodes)} node rows: " + ", ".join(f"{k} {v}" for k, v in sorted(statuses.items()))]
    lines += [f"  {name}: median {statistics.median(v):.3f} s, total {sum(v):.0f} s ({len(v)} rows)"
              for name, v in sorted(by_phase.items())]
    settings = {json.dumps(r.get("verifier_settings"), sort_keys=True) for r in nodes[-50:]}
    return lines + [f"settings (last 50 rows): {s}" for s in settings]


def whole_depth1(tree: str) -> list[str]:
    """Tasks whose level 1 is whole: a depth-0 node (the port, or its retry) marked expanded."""
    rows = list(map(json.loads, open(tree)))
    expanded = {(r["task"], r["digest"]) for r in rows if r.get("kind") == "expanded"}
    return sorted({r["task"] for r in rows if r.get("kind") == "node" and r["depth"] == 0
                   and (r["task"], r["digest"]) in expanded})


if __name__ == "__main__":
    if sys.argv[1] == "--whole-depth1":
        print(",".join(whole_depth1(sys.argv[2])))
        sys.exit(0)
    print("\n".join(phases(sys.argv[1]) + (rates(sys.argv[2]) if len(sys.argv) > 2 else [])))
