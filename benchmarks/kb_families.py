"""Per-family summary of KernelBench bench folders (issue 22's table): correct counts and geomean speedups
over eager and torch.compile for conv, conv-transpose, pooling and conv+epilogue tasks.

    python benchmarks/kb_families.py <bench folder> [<bench folder> ...]

A folder is an `mtmc bench` output (`results.json`, or for a run cut off before its report, the task
folders' bench.json). The family comes from the task's file name. Tasks that stopped on an interrupt
(`RunStopped`: no verdict on their program) are counted as not run, not as wrong; harness errors (the
verifier's own code failed, e.g. out of GPU memory) are counted apart, as neither right nor wrong.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path


def family(name: str) -> str:
    low = name.lower()
    if "pool" in low and "conv" not in low and "matmul" not in low and "gemm" not in low:
        return "pooling"
    if "transpose" in low and "conv" in low:  # not level 1's 16-18_Matmul_with_transposed_*
        return "conv-transpose"
    if "conv" in low:
        return "conv"
    return "other"


def rows_of(folder: Path) -> list[dict]:
    results = folder / "results.json"
    if results.is_file():
        return json.loads(results.read_text())["tasks"]
    return [json.loads(p.read_text())["row"] for p in sorted(folder.glob("*/bench.json"))]


def interrupted(row: dict) -> bool:
    return row["status"] == "error" and "RunStopped" in (row.get("error") or "")


def geomean(values: list[float]) -> float | None:
    return math.exp(sum(map(math.log, values)) / len(values)) if values else None


def summarize(rows: list[dict]) -> dict:
    harness = [r for r in rows if r["status"] == "error" and "harness_error" in (r.get("error") or "")]
    judged = [r for r in rows if not interrupted(r) and r not in harness]
    correct = [r for r in judged if r["correct"]]
    eager = [r["speedup_eager"] for r in correct if r.get("speedup_eager")]
    compiled = [r["speedup_compiled"] for r in correct if r.get("speedup_compiled")]
    return {"tasks": len(rows), "harness": len(harness), "judged": len(judged), "correct": len(correct),
            "eager": geomean(eager), "compiled": geomean(compiled), "timed": len(eager)}


def main(folders: list[str]) -> None:
    print("| folder | family | tasks | harness errors | judged | correct | geomean x eager "
          "| geomean x compile | timed |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for folder in map(Path, folders):
        by_family: dict[str, list[dict]] = {}
        for row in rows_of(folder):
            by_family.setdefault(family(row["task"]), []).append(row)
        for name in sorted(by_family) + ["all"]:
            s = summarize(sum(by_family.values(), []) if name == "all" else by_family[name])
            cells = [f"{s[k]:.2f}x" if s[k] else "n/a" for k in ("eager", "compiled")]
            print(f"| {folder.name} | {name} | {s['tasks']} | {s['harness']} | {s['judged']} "
                  f"| {s['correct']} | {cells[0]} | {cells[1]} | {s['timed']} |")


if __name__ == "__main__":
    main(sys.argv[1:])
