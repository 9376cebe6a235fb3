"""Eager and torch.compile times for a suite on one GPU, with each task's roofline share.

    python benchmarks/baselines.py --calibration calibration.json --out baselines.jsonl [--suite builtin]

Timing: CUDA events around one call, device synchronised before the end event, L2 flushed outside
the timed region, 3 input sets rotated, warm-up first, median of the timed calls; eager and
compiled calls interleaved so clock drift hits both alike. Roofline share = floor / time, where the
floor comes from the task's compulsory bytes and matmul FLOPs over the calibrated ceilings.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from mtmc.bench.roofline import floor_ms
from mtmc.tasks import load_suite, summarize


def _flush_buffer() -> torch.Tensor:
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    return torch.empty(4 * l2 // 4, dtype=torch.int32, device="cuda")


def time_interleaved(fns: dict, input_sets: list, flush: torch.Tensor, reps: int = 30) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in fns}
    for i in range(reps):
        for name, fn in fns.items():
            args = input_sets[i % len(input_sets)]
            flush.zero_()
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn(*args)
            torch.cuda.synchronize()
            end.record()
            end.synchronize()
            times[name].append(start.elapsed_time(end))
    return {name: statistics.median(t) for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="builtin")
    parser.add_argument("--calibration", required=True)
    parser.add_argument("--out", default="baselines.jsonl")
    args = parser.parse_args()
    calibration = json.load(open(args.calibration))
    flush = _flush_buffer()
    # PyTorch's defaults, as the verifier times its baselines (mtmc/verify/child.py): cuDNN
    # convolutions on TF32, matmuls strict fp32; each row records them
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cuda.matmul.allow_tf32 = False
    backend_flags = {"cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
                     "cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32}
    with open(args.out, "w") as out:
        for task in load_suite(args.suite):
            t0 = time.perf_counter()
            summary = summarize(task)
            with torch.device("cuda"):
                model = task.make_model(seed=0)
                input_sets = [task.make_inputs(seed=s) for s in range(3)]
            compiled = torch.compile(model)
            with torch.no_grad():
                compiled(*input_sets[0])  # compile outside the timing
                ms = time_interleaved({"eager": model, "compiled": compiled}, input_sets, flush)
            floor, _ = floor_ms(summary, task, calibration)  # None: the calibration lacks the task's rate
            share = {name: None if floor is None else floor / ms[name] for name in ms}
            row = {"task": task.name, "family": task.meta.get("family"), "eager_ms": ms["eager"],
                   "compiled_ms": ms["compiled"], "floor_ms": floor, "eager_roofline": share["eager"],
                   "compiled_roofline": share["compiled"], "backend_flags": backend_flags,
                   "wall_s": time.perf_counter() - t0}
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(f"{task.name:32s} eager {ms['eager']:7.3f} ms ({_share(share['eager'])})  "
                  f"compile {ms['compiled']:7.3f} ms ({_share(share['compiled'])})", flush=True)
            del model, compiled, input_sets
            torch._dynamo.reset()
            torch.cuda.empty_cache()


def _share(fraction: float | None) -> str:
    return "  n/a" if fraction is None else f"{fraction:5.1%}"


if __name__ == "__main__":
    main()
