"""Verify recorded final kernels again with today's verifier: false rejections and verdict latency.

    python benchmarks/reverify.py --runs RUN_A RUN_B ... [--tasks a b] [--cpu] --out reverify.json

Each RUN is a `mtmc bench` folder holding one run folder per built-in task (`<task>/kernel.py`);
a later RUN overrides an earlier one for the tasks it holds (the suite's combined table is built the
same way). Every kernel is judged once by a fresh `LocalVerifier` on GPU 0 (no verdict cache), so
each latency includes the task's reference and eager / torch.compile baselines, the same work for
any verifier version: run it with the old and the new code to compare latencies. `--cpu` judges them
with the `InterpreterVerifier` instead (Triton's interpreter, the tasks' CPU sizes; no timings).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository: benchmarks/ is not installed

from benchmarks.bench_latency import percentile  # noqa: E402
from mtmc.program import Program  # noqa: E402
from mtmc.tasks import load_task  # noqa: E402
from mtmc.verify.verifier import InterpreterVerifier, LocalVerifier  # noqa: E402


def latest_kernels(runs: list[str]) -> dict[str, Path]:
    kernels: dict[str, Path] = {}
    for run in runs:
        for path in sorted(Path(run).glob("*/kernel.py")):
            kernels[path.parent.name] = path
    return kernels


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", nargs="+", required=True)
    parser.add_argument("--tasks", nargs="*", default=None)
    parser.add_argument("--out", default="reverify.json")
    parser.add_argument("--cpu", action="store_true", help="Triton's interpreter on the CPU, not GPU 0")
    args = parser.parse_args()
    kernels = latest_kernels(args.runs)
    names = [n for n in kernels if args.tasks is None or n in args.tasks]
    rows = []
    with (InterpreterVerifier() if args.cpu else LocalVerifier(gpus=[0])) as verifier:
        for name in names:
            start = time.monotonic()
            verdict = verifier.verify(load_task(name), Program(kernels[name].read_text()))
            seconds = time.monotonic() - start
            rows.append({"task": name, "kernel": str(kernels[name]), "status": str(verdict.status),
                         "message": verdict.message, "latency_s": seconds, "flags": verdict.flags,
                         "candidate_ms": verdict.candidate_ms, "eager_ms": verdict.eager_ms,
                         "device": verdict.device,
                         "isolation": getattr(verdict, "isolation", None),
                         "phases_s": getattr(verdict, "phases_s", None)})
            print(f"{name}: {verdict.status} in {seconds:.1f} s {verdict.message[:120]}", flush=True)
            Path(args.out).write_text(json.dumps({"rows": rows}, indent=2) + "\n")
    latencies = [r["latency_s"] for r in rows]
    summary = {"tasks": len(rows), "ok": sum(r["status"] == "ok" for r in rows),
               "latency_median_s": statistics.median(latencies), "latency_p90_s": percentile(latencies, 0.9)}
    print(json.dumps(summary))
    Path(args.out).write_text(json.dumps({"summary": summary, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
