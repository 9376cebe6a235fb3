"""The 41 ports' times: trusted batch (this session's tree) against the full protocol (the seventh
session's tree, archived in 1afd600). Usage: python compare_ports.py <full.jsonl> <batch.jsonl>"""
import json, math, sys

def ports(path):
    return {r["task"]: r for r in map(json.loads, open(path)) if r["kind"] == "node" and r["depth"] == 0}

full, batch = ports(sys.argv[1]), ports(sys.argv[2])
ratios = {t: batch[t]["candidate_ms"] / full[t]["candidate_ms"] for t in sorted(full)
          if t in batch and full[t]["digest"] == batch[t]["digest"]}
for task, ratio in ratios.items():
    print(f"{task:30s} full {full[task]['candidate_ms']:.4f} batch {batch[task]['candidate_ms']:.4f} batch/full {ratio:.3f}")
values = list(ratios.values())
print(f"{len(values)} ports with the same digest; geomean batch/full {math.exp(sum(map(math.log, values)) / len(values)):.3f}; "
      f"within 5%: {sum(abs(r - 1) <= 0.05 for r in values)}, within 10%: {sum(abs(r - 1) <= 0.10 for r in values)}")
