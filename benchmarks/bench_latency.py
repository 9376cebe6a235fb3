"""Verdict latency and timing stability of the GPU verifier (run it on a GPU machine):

    python -m benchmarks.bench_latency --out results.json     # from the repository root

1. Latency: with warm workers (the reference and the eager/compile baselines already cached), the
   wall time of `verify` for `--candidates` distinct programs of a small pointwise task. Each
   program's kernel differs by a constant, so each is compiled afresh (a tiny kernel compiles in
   well under a second). Target: median < 1.5 s.
2. Stability: the same program verified `--repeats` times (no verdict cache): max/min of the
   measured candidate times. Target: < 1.05.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from mtmc.program import Program
from mtmc.tasks import Task
from mtmc.verify.table import format_verdict_table
from mtmc.verify.verifier import LocalVerifier

TASK = '''
import torch
import torch.nn as nn

n = NUMEL


class Model(nn.Module):
    def forward(self, x, y):
        return torch.sigmoid(x) * y + 2.0 * x


def get_inputs():
    return [torch.randn(n), torch.randn(n)]


def get_init_inputs():
    return []
'''

CANDIDATE = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def fused_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, tl.sigmoid(x) * y + (2.0 + 0.0 * VARIANT) * x, mask=mask)


class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)
        n = x.numel()
        fused_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        return out
'''


def small_task(numel: int) -> Task:
    return Task(name="bench_pointwise", source=TASK.replace("NUMEL", str(numel)))


def candidate(variant: int) -> Program:
    return Program(CANDIDATE.replace("VARIANT", f"{variant}.0"))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="bench_latency.json")
    parser.add_argument("--candidates", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--gpus", type=int, nargs="*", default=[0])
    parser.add_argument("--numel", type=int, default=1 << 20, help="elements per input (a small task)")
    args = parser.parse_args()

    task = small_task(args.numel)
    started = time.monotonic()
    with LocalVerifier(gpus=args.gpus, strict=True) as verifier:
        pool_s = time.monotonic() - started
        first = time.monotonic()
        warm = verifier.verify(task, candidate(0))  # pays the reference and the baselines once
        first_s = time.monotonic() - first
        print(format_verdict_table(warm), "\n")
        latencies, verdicts = [], []
        for i in range(1, args.candidates + 1):
            start = time.monotonic()
            verdicts.append(verifier.verify(task, candidate(i)))
            latencies.append(time.monotonic() - start)
            verdict = verdicts[-1]
            print(f"candidate {i}: {latencies[-1]:.3f} s {verdict.status} {verdict.phases_s}", flush=True)
        repeat_ms = [verifier.verify(task, candidate(0)).candidate_ms for _ in range(args.repeats)]
    statuses = sorted({str(v.status) for v in [warm, *verdicts]})
    results = {
        "device": warm.device,
        "pool_start_s": pool_s,
        "first_verify_s": first_s,
        "numel": args.numel,
        "latency_s": latencies,
        "phases_s": [v.phases_s for v in verdicts],
        "latency_median_s": statistics.median(latencies),
        "latency_p90_s": percentile(latencies, 0.9),
        "statuses": statuses,
        "repeat_candidate_ms": repeat_ms,
        "repeat_max_over_min": max(repeat_ms) / min(repeat_ms),
        "eager_ms": warm.eager_ms,
        "compiled_ms": warm.compiled_ms,
        "roofline_ms": warm.roofline_ms,
        "triton_share": warm.triton_share,
    }
    rows = [
        ("device", warm.device),
        ("pool start", f"{pool_s:.2f} s"),
        ("first verify (reference + baselines)", f"{first_s:.2f} s"),
        ("verify latency median", f"{results['latency_median_s']:.3f} s (target < 1.5 s)"),
        ("verify latency p90", f"{results['latency_p90_s']:.3f} s"),
        ("statuses", ", ".join(statuses)),
        ("candidate ms over repeats", f"{min(repeat_ms):.4f} .. {max(repeat_ms):.4f}"),
        ("repeat max/min", f"{results['repeat_max_over_min']:.4f} (target < 1.05)"),
        ("eager / compiled / roofline ms", f"{warm.eager_ms} / {warm.compiled_ms} / {warm.roofline_ms}"),
    ]
    width = max(len(name) for name, _ in rows)
    print("\n".join(f"{name.ljust(width)}  {value}" for name, value in rows))
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
