"""KernelBench's own eval harness on our bench's programs: a second opinion (issue 25, Show 6).

    PYTHONPATH=<KernelBench>/src:$PYTHONPATH python benchmarks/kb_eval.py --tasks-dir .kb/l1 \
        --bench <bench folder> [<bench folder> ...] --out $OUT/kb_eval.json [--time-limit 500] \
        [--stub-llm-clients]

For every task of the bench folders with a program (`<task>/kernel.py`), it runs KernelBench's
`eval_kernel_against_ref` (fetched from ScalingIntelligence/KernelBench and put on PYTHONPATH: never
copied here) on the task file and the program: 5 correctness trials at fp32 tolerance 1e-4
(torch.allclose on its own random inputs), then CUDA-event timings of the program and of the
reference. It prints one row per task beside our verdict (correct, ms, eager ms) and writes JSON
after each task; once --time-limit seconds have passed the rest are recorded as skipped.

KernelBench runs the reference with PyTorch's default flags (cuDNN TF32 on) and judges at 1e-4 with
no allowance for TF32, and runs each module as its constructor leaves it (training mode): where the
two harnesses disagree on correctness, the row says which check failed, for BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any

import torch


def our_row(task_dir: Path) -> dict[str, Any]:
    path = task_dir / "bench.json"
    bench = json.loads(path.read_text())["row"] if path.exists() else {}
    return {k: bench.get(k) for k in ("correct", "candidate_ms", "eager_ms", "compiled_ms", "status")}


def stub_llm_clients() -> None:
    """KernelBench's utils module imports its LLM clients (dotenv, openai, litellm) at module level; its
    eval needs none of them, and the GPU machine has none. Empty modules stand in where one is missing."""
    import importlib.util
    import sys
    import types

    for name in ("dotenv", "openai", "litellm"):
        if importlib.util.find_spec(name) is None:
            module = types.ModuleType(name)
            module.load_dotenv = module.OpenAI = module.completion = lambda *a, **k: None
            sys.modules[name] = module


def kb_row(task_file: Path, program: Path, trials: int, perf_trials: int) -> dict[str, Any]:
    from kernelbench.eval import eval_kernel_against_ref  # KernelBench's src/ on PYTHONPATH

    result = eval_kernel_against_ref(task_file.read_text(), program.read_text(), seed_num=42,
                                     num_correct_trials=trials, num_perf_trials=perf_trials,
                                     measure_performance=True, backend="triton",
                                     device=torch.device("cuda:0"))
    if result is None:
        return {"kb_error": "eval returned None (a lock or compile failure)"}
    meta = {k: str(v)[:300] for k, v in (result.metadata or {}).items()}
    return {"kb_compiled": result.compiled, "kb_correct": result.correctness,
            # KernelBench's KernelExecResult says "in us", but both hold timing.get_timing_stats' mean
            # of CUDA-event times, which are milliseconds (27_Conv3d: 6.47 against our 6.33 ms)
            "kb_ms": result.runtime if result.runtime and result.runtime > 0 else None,
            "kb_ref_ms": result.ref_runtime if result.ref_runtime and result.ref_runtime > 0 else None,
            "kb_meta": meta}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--tasks-dir", required=True)
    p.add_argument("--bench", nargs="+", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--trials", type=int, default=5)
    p.add_argument("--perf-trials", type=int, default=100)
    p.add_argument("--time-limit", type=float, default=500)
    p.add_argument("--stub-llm-clients", action="store_true", help="see stub_llm_clients")
    args = p.parse_args()
    if args.stub_llm_clients:
        stub_llm_clients()
    start, rows = time.time(), []
    report: dict[str, Any] = {"summary": summarize(rows)}
    for folder in map(Path, args.bench):
        for task_dir in sorted(d for d in folder.iterdir() if (d / "kernel.py").exists()):
            row = {"task": task_dir.name, "bench": str(folder), **our_row(task_dir)}
            if time.time() - start > args.time_limit:
                row["skipped"] = "time limit"
            else:
                try:
                    row.update(kb_row(Path(args.tasks_dir) / f"{task_dir.name}.py", task_dir / "kernel.py",
                                      args.trials, args.perf_trials))
                except Exception as err:  # noqa: BLE001 - one task's failure is a row, not the end
                    row["kb_error"] = f"{type(err).__name__}: {str(err)[:300]}"
                torch.cuda.empty_cache()
            rows.append(row)
            print(line(row), flush=True)
            report = {"device": torch.cuda.get_device_name(), "summary": summarize(rows), "rows": rows}
            Path(args.out).write_text(json.dumps(report, indent=1))
    print(json.dumps(report["summary"], indent=1))


SPEED_GAP = 0.10  # issue 25 Show 6: a speed disagreement past this needs its reason written down


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """What Show 6 asks of the rows: the tasks judged by both, where their correctness verdicts differ,
    and, on the tasks both call correct, each harness's geomean speedup over its own eager time and
    the tasks whose speedups differ by more than SPEED_GAP."""
    judged = [r for r in rows if r.get("kb_correct") is not None and r.get("correct") is not None]
    both = [r for r in judged if r["correct"] and r["kb_correct"] and _ratios(r)]
    gaps = {r["task"]: round(kb / ours, 3) for r in both for ours, kb in [_ratios(r)]
            if abs(kb / ours - 1) > SPEED_GAP}
    return {"judged": len(judged), "agree": sum(r["correct"] == r["kb_correct"] for r in judged),
            "disagree": [r["task"] for r in judged if r["correct"] != r["kb_correct"]],
            "timed_by_both": len(both),
            "geomean_ours_vs_eager": _geomean([_ratios(r)[0] for r in both]),
            "geomean_kb_vs_eager": _geomean([_ratios(r)[1] for r in both]),
            "speed_gaps_kb_over_ours": gaps}


def _ratios(row: dict[str, Any]) -> tuple[float, float] | None:
    """(our speedup over eager, KernelBench's over its reference), where both were timed."""
    if not all(row.get(k) for k in ("eager_ms", "candidate_ms", "kb_ms", "kb_ref_ms")):
        return None
    return row["eager_ms"] / row["candidate_ms"], row["kb_ref_ms"] / row["kb_ms"]


def _geomean(values: list[float]) -> float | None:
    return round(math.exp(sum(map(math.log, values)) / len(values)), 4) if values else None


def line(row: dict[str, Any]) -> str:
    agree = row.get("kb_correct") == row.get("correct")
    return (f"{row['task'][:50]:50s} ours {row.get('correct')!s:5s} {row.get('candidate_ms') or 0:8.3f} ms"
            f" | kb {row.get('kb_correct')!s:5s} {row.get('kb_ms') or 0:8.3f} ms ref "
            f"{row.get('kb_ref_ms') or 0:8.3f} ms{'' if agree else '  DISAGREE'}")


if __name__ == "__main__":
    main()
