"""Probe the template coder's pool kernels on a GPU: flat form x tile form x vector taps (issue 22).

    python benchmarks/probes/2026-11-26-pool/run.py --tasks-dir .kb/l1 \
        --tasks 41_ 42_ 43_ 44_ 45_ 46_ --out $OUT/pool.json --time-limit 200

For each task (a file of --tasks-dir whose name starts with one of --tasks) it ports the task with
the template coder, fuses what fuses, then for each variant overrides the configuration of the
program's pool kernels (a variant is `name:key=value,...`; keys are config keys: form (flat |
tile), BLOCK, BLOCK_M, BLOCK_N, vector, num_warps; see coders/template/emit/pool.py), checks the
result against eager PyTorch (max abs error) and times it with triton.testing.do_bench (median,
few repeats: the KernelBench sizes move 4-17 GB per call) against eager and torch.compile.

The memory floor of a task is its inputs read once and its outputs written once. Its time is that
many bytes at the bandwidth of a device-to-device copy measured in the same run (a copy of the
task's input size, at most 4 GiB each way), and at --bandwidth (nominal, 3 TB/s for an H100 as in
the issue); each variant's `floor_pct` (copy) and `nominal_pct` are floor time / its time.

Inputs are made on the device (the task's get_inputs under a torch.device context): 45's 17 GB
input would take a long time on the host. The JSON is rewritten after each task; one failing task
or variant is recorded and skipped; past --time-limit seconds the remaining ones are skipped.

--cpu-dry-run checks the script's logic on the CPU (TRITON_INTERPRET=1, set here) at small sizes
(DRY_SIZES, or --sizes), one timing repeat, no torch.compile.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path
from typing import Any

if "--cpu-dry-run" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository: benchmarks/ is not installed

from benchmarks.probes import harness  # noqa: E402
from coders.template import TemplateCoder  # noqa: E402
from coders.template.emit import pool as pool_emit  # noqa: E402
from coders.template.ir import ProgramIR  # noqa: E402
from mtmc.tasks import Task  # noqa: E402
from mtmc.tasks.task import task_from_file  # noqa: E402

# name: config overrides of the pool kernels ("port" keeps the port's choice: flat, BLOCK 512)
VARIANTS = [
    "port:",
    "flat-1024-w8:form=flat,BLOCK=1024,num_warps=8",
    "tile-1x1024-w4:form=tile,BLOCK_M=1,BLOCK_N=1024,num_warps=4",
    "tile-4x256-w4:form=tile,BLOCK_M=4,BLOCK_N=256,num_warps=4",
    "tile-8x128-w4:form=tile,BLOCK_M=8,BLOCK_N=128,num_warps=4",
    "tile-16x64-w4:form=tile,BLOCK_M=16,BLOCK_N=64,num_warps=4",
    "tile-16x128-w8:form=tile,BLOCK_M=16,BLOCK_N=128,num_warps=8",
    "vec-4x64-w4:form=tile,vector=1,BLOCK_M=4,BLOCK_N=64,num_warps=4",
    "vec-8x32-w4:form=tile,vector=1,BLOCK_M=8,BLOCK_N=32,num_warps=4",
    "vec-16x64-w8:form=tile,vector=1,BLOCK_M=16,BLOCK_N=64,num_warps=8",
]

# --cpu-dry-run sizes: each task takes the constants it defines (odd, windows do not divide them)
# (45's 11 x 11 window needs 11 rows; the interpreter's time grows with the programs x taps)
DRY_SIZES = {"batch_size": 2, "features": 3, "channels": 2, "in_channels": 3, "sequence_length": 45,
             "input_length": 45, "height": 13, "width": 25, "depth": 7, "dim1": 7, "dim2": 8, "dim3": 9}

COPY_CAP = 4 * 2**30  # bytes: a copy this large runs at the device's streaming bandwidth


def configure(ir: ProgramIR, overrides: dict[str, Any]) -> tuple[ProgramIR, list[dict]]:
    """A copy of `ir` with the overrides on every pool kernel; the pool kernels' configs. A flat
    variant drops the tile keys; vector taps where they do not apply (indices, adaptive) fail."""
    ir = ProgramIR.from_dict(ir.to_dict())
    pools = [k for k in ir.kernels() if k.kind == "pool"]
    if not pools:
        raise ValueError("the program has no pool kernel")
    for kernel in pools:
        cfg = {k: v for k, v in kernel.config.items() if k != "autotune"}
        cfg.update(overrides)
        if cfg.get("form") == "tile":
            cfg["BLOCK"] = cfg["BLOCK_M"] * cfg["BLOCK_N"]  # what steps.programs reads
        else:
            for key in ("BLOCK_M", "BLOCK_N", "vector"):
                cfg.pop(key, None)
        kernel.config = cfg
        if cfg.get("vector") and not pool_emit.is_vector(kernel):
            raise ValueError("vector taps need a fixed window and no return_indices")
    return ir, [dict(k.config) for k in pools]


def nbytes(values: Any) -> int:
    values = values if isinstance(values, tuple | list) else [values]
    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))


def max_error(got: Any, expected: Any) -> float:
    """Max |got - expected| over the outputs (fp32; NaN where they disagree on NaN)."""
    got = got if isinstance(got, tuple | list) else [got]
    expected = expected if isinstance(expected, tuple | list) else [expected]
    worst = 0.0
    for g, e in zip(got, expected, strict=True):
        if g.shape != e.shape or g.dtype != e.dtype:
            return math.inf
        if not g.numel():
            continue
        if not torch.equal(g.isnan(), e.isnan()):
            return math.nan
        diff = (g.float() - e.float()).abs().nan_to_num(0.0)
        worst = max(worst, float(diff.max()))
    return worst


def copy_bandwidth(nbytes_: int, device: str, bench) -> float:
    """Bytes per second of a device-to-device copy of about `nbytes_` (read once, written once)."""
    n = max(1, min(nbytes_, COPY_CAP) // 4)
    src = torch.empty(n, device=device)
    dst = torch.empty_like(src)
    ms = bench(lambda: dst.copy_(src))
    return 2 * n * 4 / (ms * 1e-3)


def dry_sizes(task: Task) -> dict:
    module = task.module({})
    return {k: v for k, v in DRY_SIZES.items() if hasattr(module, k)}


def baselines(row: dict, reference, inputs, expected, args, bench, device: str) -> None:
    """The task's bytes, its memory floor, and eager and torch.compile times, into `row`."""
    row["bytes"] = nbytes(inputs) + nbytes(expected)
    row["copy_bw"] = copy_bandwidth(nbytes(inputs), device, bench)
    row["floor_ms"] = row["bytes"] / row["copy_bw"] * 1e3
    row["nominal_floor_ms"] = row["bytes"] / args.bandwidth * 1e3
    row["eager_ms"] = bench(lambda: reference(*inputs))
    if not args.cpu_dry_run and not args.no_compile:
        try:
            compiled = torch.compile(reference)
            row["compile_err"] = max_error(compiled(*inputs), expected)
            row["compile_ms"] = bench(lambda: compiled(*inputs))
        except Exception as err:
            row["compile_error"] = harness.described(err)
        finally:
            torch._dynamo.reset()  # the next task's model is compiled from scratch


def probe_task(coder: TemplateCoder, path: Path, variants: list[tuple[str, dict]], args, clock) -> dict:
    task = task_from_file(path)
    cpu = args.cpu_dry_run
    device = "cpu" if cpu else "cuda"
    sizes = harness.sizes_of(task, args, dry=dry_sizes)
    bench = harness.timer(cpu, args.warmup, args.rep)
    row: dict[str, Any] = {"task": path.stem, "sizes": sizes}
    reference = task.make_model(seed=0, sizes=sizes).to(device)
    with torch.device(device):  # the task's get_inputs makes its tensors on the device
        inputs = task.make_inputs(seed=1, sizes=sizes)
    with torch.no_grad():
        expected = reference(*inputs)
        baselines(row, reference, inputs, expected, args, bench, device)
    base = harness.fused_ir(coder, task)
    row["kernels"] = [k.kind for k in base.kernels()]
    harness.probe_variants(row, variants, args, clock, lambda name, overrides: probe_variant(
        task, path, base, name, overrides, reference, inputs, expected, row, bench, device))
    return row


def probe_variant(task, path, base, name, overrides, reference, inputs, expected, row, bench,
                  device, configure_fn=None) -> dict:
    """One variant's time and error (`configure_fn` applies its overrides: this probe's `configure` by
    default; the 2026-11-27 probe passes its own)."""
    result: dict[str, Any] = {}
    try:
        ir, result["configs"] = (configure_fn or configure)(base, overrides)
        module = harness.load(task, ir, path, name)[1]
        candidate = harness.instantiate(module, task, row["sizes"], reference, device)
        result.update(harness.measure(candidate, inputs, expected, bench, error=max_error))
        harness.floor_shares(result, row)
    except Exception as err:  # a compile or launch failure is a result to report, not a crash
        result.update(harness.failure(err))
    return result


def print_row(row: dict) -> None:
    if "error" in row:
        print(f"{row['task']}: ERROR {row['error']}", flush=True)
        return
    print(f"{row['task'][:60]}: {row['bytes'] / 1e9:.2f} GB, copy {row['copy_bw'] / 1e12:.2f} TB/s, "
          f"floor {row['floor_ms']:.3f} ms; eager {row['eager_ms']:.3f} ms "
          f"({100 * row['floor_ms'] / row['eager_ms']:.0f}% floor), "
          f"compile {row.get('compile_ms', float('nan')):.3f} ms", flush=True)
    harness.print_variants(row, 18, lambda r: (
        f"{r['ms']:9.3f} ms  {r['floor_pct']:5.1f}% floor  ({r['nominal_pct']:5.1f}% at nominal)  "
        f"x{r['vs_eager']:.2f} eager  x{r.get('vs_compile', float('nan')):.2f} compile  "
        f"err {r['max_err']:.1e}"))


def summary(rows: list[dict]) -> dict[str, dict]:
    """Per variant: tasks measured, geomean of % floor and of the speedups; per task, the best."""
    best = {}
    for r in rows:
        timed = {n: v for n, v in r.get("variants", {}).items() if "ms" in v}
        if timed:
            name = min(timed, key=lambda n: timed[n]["ms"])
            best[r["task"]] = {"variant": name, "floor_pct": timed[name]["floor_pct"]}
    return {"variants": harness.geomeans(rows, ("floor_pct", "vs_eager", "vs_compile")), "best": best}


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__, time_limit=200.0, time_help="seconds; later variants are skipped")
    parser.add_argument("--bandwidth", type=float, default=3.0e12, help="nominal bytes/s for nominal_pct")
    parser.add_argument("--warmup", type=int, default=10, help="do_bench warm-up, ms")
    parser.add_argument("--rep", type=int, default=40, help="do_bench repetition time, ms")
    harness.add_dry_run(parser, "small sizes on the CPU interpreter")
    args = parser.parse_args(argv)
    run_meta = harness.meta(args, nominal_bandwidth=args.bandwidth,
                            do_bench={"warmup_ms": args.warmup, "rep_ms": args.rep, "return_mode": "median"})
    result = summary(harness.probe_tasks(args, VARIANTS, probe_task, print_row, summary, run_meta))
    harness.print_geomeans(result["variants"], width=18, unit="")
    for task, best in result["best"].items():
        print(f"best {task}: {best['variant']} {best['floor_pct']:.1f}% floor")


if __name__ == "__main__":
    main()
