"""Probe the template coder's forward convolutions on a GPU: K-loop order x precision x tile.

    python benchmarks/probes/2026-11-26-conv/run.py --tasks-dir .kb/l1 \
        --tasks 50_conv 63_conv --out $OUT/conv.json --time-limit 400

For each task (a file of --tasks-dir whose name starts with one of --tasks) it ports the task with
the template coder, fuses every epilogue, then for each variant overrides the configuration of
the program's implicit-GEMM conv kernels (a variant is `name:key=value,...`; keys are config keys:
k_loop, precision, BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages), checks the result against
eager PyTorch with TF32 off (max abs error; the same for eager with cuDNN TF32 on, for scale) and
times it with triton.testing.do_bench (median) against eager with cuDNN TF32 on (PyTorch's default)
and off, and torch.compile (default flags). It prints a table and rewrites the JSON after each
task. One failing task or variant is recorded and skipped; once --time-limit seconds have passed
the remaining tasks are recorded as skipped.

--cpu-dry-run checks the script's logic on the CPU (TRITON_INTERPRET=1, set here): the task's own
cpu_sizes, or --sizes, one timing repeat, no torch.compile.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

if "--cpu-dry-run" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported

import torch  # noqa: E402
import triton  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository: benchmarks/ is not installed

from benchmarks.gpu_bench import load_program  # noqa: E402
from coders.template import TemplateCoder, steps  # noqa: E402
from coders.template.emit.module import generate  # noqa: E402
from coders.template.ir import ProgramIR  # noqa: E402
from mtmc.program import Program  # noqa: E402
from mtmc.strategies import PORT  # noqa: E402
from mtmc.tasks import Task  # noqa: E402
from mtmc.tasks.task import task_from_file  # noqa: E402

# name: config overrides of the implicit-GEMM conv kernels ("port" keeps the port's choice)
VARIANTS = [
    "port:",
    "flat-ieee:k_loop=flat,precision=ieee",
    "taps-ieee:k_loop=taps,precision=ieee",
    "taps-tf32x3:k_loop=taps,precision=tf32x3",
    "flat-tf32:k_loop=flat,precision=tf32",
    "taps-tf32:k_loop=taps,precision=tf32",
    "taps-tf32-128x128x32:k_loop=taps,precision=tf32,BLOCK_M=128,BLOCK_N=128,BLOCK_K=32,num_warps=8,num_stages=3",
    "taps-tf32-128x64x32:k_loop=taps,precision=tf32,BLOCK_M=128,BLOCK_N=64,BLOCK_K=32,num_warps=4,num_stages=3",
    "taps-tf32-64x128x32:k_loop=taps,precision=tf32,BLOCK_M=64,BLOCK_N=128,BLOCK_K=32,num_warps=4,num_stages=3",
    "taps-tf32-128x128x16:k_loop=taps,precision=tf32,BLOCK_M=128,BLOCK_N=128,BLOCK_K=16,num_warps=8,num_stages=4",
    "taps-tf32-256x64x32:k_loop=taps,precision=tf32,BLOCK_M=256,BLOCK_N=64,BLOCK_K=32,num_warps=8,num_stages=3",
]


def parse_variant(text: str) -> tuple[str, dict[str, Any]]:
    name, _, body = text.partition(":")
    overrides: dict[str, Any] = {}
    for item in filter(None, body.split(",")):
        key, _, value = item.partition("=")
        overrides[key.strip()] = int(value) if value.strip().isdigit() else value.strip()
    return name, overrides


def find_tasks(folder: Path, prefixes: list[str]) -> list[Path]:
    files = sorted(folder.glob("*.py"))
    found = []
    for prefix in prefixes:
        match = [f for f in files if f.stem == prefix] or [f for f in files if f.stem.startswith(prefix)]
        if not match:
            raise SystemExit(f"no task in {folder} starts with {prefix!r}")
        found += [f for f in match if f not in found]
    return found


def fused_ir(coder: TemplateCoder, task: Task) -> ProgramIR:
    program = coder.apply(task, None, PORT)
    while fusions := [s for s in coder.legal_strategies(task, program) if s.kind == "fuse"]:
        program = coder.apply(task, program, fusions[0])
    return ProgramIR.from_dict(program.metadata["template_ir"])


DIRECT_KEYS = ("BLOCK_M", "BLOCK_N", "num_warps", "num_stages")


def configure(ir: ProgramIR, overrides: dict[str, Any]) -> tuple[ProgramIR, list[dict]]:
    """A copy of `ir` with the overrides on every conv kernel (on a direct-form kernel, only those
    it has: tiles, warps, stages); the conv kernels' configs."""
    ir = ProgramIR.from_dict(ir.to_dict())
    convs = [k for k in ir.kernels() if k.kind == "conv"]
    for kernel in convs:
        direct = kernel.space["form"] == "direct"
        kernel.config.update({k: v for k, v in overrides.items() if not direct or k in DIRECT_KEYS})
        kernel.config.pop("autotune", None)
        fits = steps.smem_bytes(ir, kernel) <= steps.SMEM_BYTES
        if not fits:
            raise ValueError(f"tiles need {steps.smem_bytes(ir, kernel)} B of shared memory")
    configs = [dict(k.config, form=k.space["form"]) for k in ir.kernels() if k.kind == "conv"]
    return ir, configs


def on(device: str, values: list[Any]) -> list[Any]:
    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]


def max_error(got: Any, expected: Any) -> float:
    got = got if isinstance(got, tuple | list) else [got]
    expected = expected if isinstance(expected, tuple | list) else [expected]
    worst = 0.0
    for g, e in zip(got, expected, strict=True):
        if g.shape != e.shape:
            return math.inf
        worst = max(worst, float((g.double() - e.double()).abs().max()) if g.numel() else 0.0)
    return worst


def timer(cpu: bool):
    if cpu:
        def once(fn) -> float:
            fn()  # a warm-up (interpreter caches)
            start = time.perf_counter()
            fn()
            return (time.perf_counter() - start) * 1e3
        return once
    return lambda fn: triton.testing.do_bench(fn, return_mode="median")


def set_tf32(conv: bool, matmul: bool = False) -> None:
    torch.backends.cudnn.allow_tf32 = conv
    torch.backends.cuda.matmul.allow_tf32 = matmul


def probe_task(coder: TemplateCoder, path: Path, variants: list[tuple[str, dict]], args, clock) -> dict:
    task = task_from_file(path)
    cpu = args.cpu_dry_run
    device = "cpu" if cpu else "cuda"
    sizes = json.loads(args.sizes) if args.sizes else (task.sizes("cpu")[0] if cpu else {})
    bench = timer(cpu)
    row: dict[str, Any] = {"task": path.stem, "sizes": sizes}
    reference = task.make_model(seed=0, sizes=sizes).to(device)
    inputs = on(device, task.make_inputs(seed=1, sizes=sizes))
    with torch.no_grad():
        set_tf32(False)
        expected = reference(*inputs)
        row["eager_ieee_ms"] = bench(lambda: reference(*inputs))
        set_tf32(True)  # PyTorch's default: cuDNN convolutions on TF32, matmuls strict
        row["eager_tf32_err"] = max_error(reference(*inputs), expected)
        row["eager_tf32_ms"] = bench(lambda: reference(*inputs))
        if not cpu and not args.no_compile:
            try:
                compiled = torch.compile(reference)
                compiled(*inputs)
                row["compile_ms"] = bench(lambda: compiled(*inputs))
            except Exception as err:
                row["compile_error"] = f"{type(err).__name__}: {str(err)[:300]}"
        set_tf32(False)
    base = fused_ir(coder, task)
    row["variants"] = {}
    for name, overrides in variants:
        if clock() > args.time_limit:
            row["variants"][name] = {"skipped": "time limit"}
            continue
        result: dict[str, Any] = {}
        try:
            ir, configs = configure(base, overrides)
            result["configs"] = configs
            module = load_program(Program(generate(task, ir)), f"{path.stem}_{name}".replace("-", "_"))
            torch.manual_seed(0)
            candidate = module.ModelNew(*task.init_inputs(sizes)).to(device)
            candidate.load_state_dict(reference.state_dict())
            with torch.no_grad():
                result["max_err"] = max_error(candidate(*inputs), expected)
                result["ms"] = bench(lambda c=candidate: c(*inputs))
            result["vs_eager_tf32"] = row["eager_tf32_ms"] / result["ms"]
            result["vs_eager_ieee"] = row["eager_ieee_ms"] / result["ms"]
            if "compile_ms" in row:
                result["vs_compile"] = row["compile_ms"] / result["ms"]
        except Exception as err:  # a compile or launch failure is a result to report, not a crash
            result["error"] = f"{type(err).__name__}: {str(err)[:300]}"
            result["trace"] = traceback.format_exc()[-1500:]
        row["variants"][name] = result
        if not cpu:
            torch.cuda.synchronize()
    return row


def print_row(row: dict) -> None:
    if "error" in row:
        print(f"{row['task']}: ERROR {row['error']}", flush=True)
        return
    head = (f"{row['task'][:60]}: eager tf32 {row['eager_tf32_ms']:.3f} ms, "
            f"ieee {row['eager_ieee_ms']:.3f} ms, compile {row.get('compile_ms', float('nan')):.3f} ms; "
            f"eager tf32 err {row['eager_tf32_err']:.1e}")
    print(head, flush=True)
    for name, r in row["variants"].items():
        if "ms" in r:
            print(f"    {name:28s} {r['ms']:9.3f} ms  x{r['vs_eager_tf32']:.2f} eager-tf32  "
                  f"x{r['vs_eager_ieee']:.2f} eager-ieee  x{r.get('vs_compile', float('nan')):.2f} compile  "
                  f"err {r['max_err']:.1e}", flush=True)
        else:
            print(f"    {name:28s} {r.get('skipped') or r.get('error', '')[:150]}", flush=True)


def summary(rows: list[dict]) -> dict[str, dict]:
    """Per variant: tasks measured and the geomean speedups over each baseline."""
    out: dict[str, dict] = {}
    names = dict.fromkeys(n for r in rows for n in r.get("variants", {}))
    for name in names:
        measured = [r["variants"][name] for r in rows if "ms" in r.get("variants", {}).get(name, {})]
        entry: dict[str, Any] = {"tasks": len(measured)}
        for key in ("vs_eager_tf32", "vs_eager_ieee", "vs_compile"):
            values = [m[key] for m in measured if key in m]
            if values:
                entry[key] = math.exp(sum(math.log(v) for v in values) / len(values))
        out[name] = entry
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks-dir", type=Path, required=True)
    parser.add_argument("--tasks", nargs="+", required=True, help="task file names or their prefixes")
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    parser.add_argument("--time-limit", type=float, default=400.0, help="seconds; later tasks are skipped")
    parser.add_argument("--variants", default=None, help="';'-separated name:key=value,... (default: a menu)")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile baseline")
    parser.add_argument("--sizes", default=None, help="JSON size overrides for every task")
    parser.add_argument("--cpu-dry-run", action="store_true", help="tiny sizes on the CPU interpreter")
    args = parser.parse_args(argv)
    variants = [parse_variant(v) for v in (args.variants.split(";") if args.variants else VARIANTS)]
    start = time.monotonic()
    clock = lambda: time.monotonic() - start  # noqa: E731
    coder = TemplateCoder()
    rows: list[dict] = []
    meta = {"device": "cpu" if args.cpu_dry_run else torch.cuda.get_device_name(),
            "torch": torch.__version__, "triton": triton.__version__,
            "eager_flags": "eager_tf32: cudnn.allow_tf32=True (default), eager_ieee: False; "
                           "cuda.matmul.allow_tf32=False in both; torch.compile with the defaults"}
    for path in find_tasks(args.tasks_dir, args.tasks):
        if clock() > args.time_limit:
            rows.append({"task": path.stem, "skipped": "time limit"})
            print(f"{path.stem}: skipped (time limit)", flush=True)
            continue
        try:
            row = probe_task(coder, path, variants, args, clock)
        except Exception as err:
            row = {"task": path.stem, "error": f"{type(err).__name__}: {str(err)[:300]}",
                   "trace": traceback.format_exc()[-1500:]}
        row["elapsed_s"] = round(clock(), 1)
        rows.append(row)
        print_row(row)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"meta": meta, "rows": rows, "summary": summary(rows)}, indent=1))
        if not args.cpu_dry_run:
            torch.cuda.empty_cache()
    for name, entry in summary(rows).items():
        geo = "  ".join(f"{k} {v:.2f}x" for k, v in entry.items() if k != "tasks")
        print(f"{name:28s} {entry['tasks']} tasks  geomean {geo}")


if __name__ == "__main__":
    main()
