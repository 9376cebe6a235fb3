"""Probe the template coder's recurrent layers on a GPU: the time loop in the kernel vs per step.

    python benchmarks/probes/2026-11-26-rnn/run.py --tasks-dir .kb/l3 \
        --tasks 35_ 36_ 37_ 38_ 39_ 40_ 41_ 42_ --out $OUT/rnn.json --time-limit 500

For each task (a file of --tasks-dir whose name starts with one of --tasks) it ports the task with
the template coder, then for each variant overrides the configuration of the program's recurrent
kernels (a variant is `name:key=value,...`; keys are config keys: time_loop (kernel | host),
BLOCK_B, BLOCK, BLOCK_K, num_warps, precision), checks the result against eager PyTorch with TF32
off (max abs error; the same for eager with TF32 on, for scale) and times it with
triton.testing.do_bench (median) against eager with cuDNN TF32 on (PyTorch's default) and off, and
torch.compile (default flags). It prints a table and rewrites the JSON after each task. One failing
task or variant is recorded and skipped; once --time-limit seconds have passed the remaining
variants and tasks are recorded as skipped.

--cpu-dry-run checks the script's logic on the CPU (TRITON_INTERPRET=1, set here) at small sizes:
--sizes, else the task's cpu_sizes, else SMALL (the KernelBench constants it defines), one timing
repeat, no torch.compile.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
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
from coders.template import TemplateCoder  # noqa: E402
from coders.template.emit.module import generate  # noqa: E402
from coders.template.ir import ProgramIR  # noqa: E402
from mtmc.program import Program  # noqa: E402
from mtmc.strategies import PORT  # noqa: E402
from mtmc.tasks import Task  # noqa: E402
from mtmc.tasks.task import task_from_file  # noqa: E402

# name: config overrides of the recurrent kernels ("kernel" keeps the port's choice)
VARIANTS = [
    "kernel:",
    "host:time_loop=host",
    "kernel-b64:BLOCK=64",
    "kernel-b64-w8:BLOCK=64,num_warps=8",
    "kernel-b32-k64:BLOCK=32,BLOCK_K=64",
    "kernel-b64-k64-w8:BLOCK=64,BLOCK_K=64,num_warps=8",
    "kernel-b128-k32-w8:BLOCK=128,BLOCK_K=32,num_warps=8",
    "kernel-b16-k64-w2:BLOCK=16,BLOCK_K=64,num_warps=2",
    "kernel-tf32:precision=tf32",
    "kernel-b64-w8-tf32:BLOCK=64,num_warps=8,precision=tf32",
]
RNN_TASKS = ["35_", "36_", "37_", "38_", "39_", "40_", "41_", "42_"]  # KernelBench level 3
# the dry run's sizes: the constants of KernelBench's RNN tasks, cut down (those a task defines);
# not num_layers: the port unrolls the layers it traced, a structural constant of the module
SMALL = {"batch_size": 3, "sequence_length": 4, "seq_len": 4, "input_size": 7, "hidden_size": 17,
         "output_size": 5}


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


def task_sizes(task: Task, args) -> dict[str, Any]:
    if args.sizes:
        return json.loads(args.sizes)
    if not args.cpu_dry_run:
        return {}
    if task.meta.get("cpu_sizes"):
        return task.sizes("cpu")[0]
    defined = vars(task.module())
    return {k: v for k, v in SMALL.items() if k in defined}


def configure(ir: ProgramIR, overrides: dict[str, Any]) -> tuple[ProgramIR, list[dict]]:
    """A copy of `ir` with the overrides on every recurrent kernel; their configs."""
    ir = ProgramIR.from_dict(ir.to_dict())
    recurrent = [k for k in ir.kernels() if k.kind == "recurrent"]
    if not recurrent:
        raise ValueError("the port has no recurrent kernel")
    for kernel in recurrent:
        kernel.config.update(overrides)
    return ir, [dict(k.config) for k in recurrent]


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


def set_tf32(on_: bool) -> None:
    """cuDNN's RNNs follow cudnn.allow_tf32 (on by default); matmuls stay strict."""
    torch.backends.cudnn.allow_tf32 = on_
    torch.backends.cuda.matmul.allow_tf32 = False


def baselines(row: dict, reference, inputs: list, args, bench) -> Any:
    """Eager (TF32 off: the expected values; on) and torch.compile times, into `row`."""
    with torch.no_grad():
        set_tf32(False)
        expected = reference(*inputs)
        row["eager_ieee_ms"] = bench(lambda: reference(*inputs))
        set_tf32(True)
        row["eager_tf32_err"] = max_error(reference(*inputs), expected)
        row["eager_tf32_ms"] = bench(lambda: reference(*inputs))
        if not args.cpu_dry_run and not args.no_compile:
            try:
                compiled = torch.compile(reference)
                compiled(*inputs)
                row["compile_ms"] = bench(lambda: compiled(*inputs))
            except Exception as err:
                row["compile_error"] = f"{type(err).__name__}: {str(err)[:300]}"
        set_tf32(False)
    return expected


class Counted:
    """A kernel whose launches (`kernel[grid]`) are counted."""

    def __init__(self, kernel) -> None:
        self.kernel, self.launches = kernel, 0

    def __getitem__(self, grid):
        self.launches += 1
        return self.kernel[grid]


def recurrent_launches(module, source: str, run) -> int:
    """Launches of the program's recurrent kernels during `run()`."""
    names = re.findall(r"def (\w+)\(gx_ptr, whh_ptr", source)
    kernels = {n: getattr(module, n) for n in names}
    counted = {n: Counted(k) for n, k in kernels.items()}
    for name, kernel in counted.items():
        setattr(module, name, kernel)
    try:
        run()
    finally:
        for name, kernel in kernels.items():
            setattr(module, name, kernel)
    return sum(k.launches for k in counted.values())


def run_variant(task: Task, base: ProgramIR, overrides: dict, reference, inputs, expected, row, ctx) -> dict:
    """One variant's configs, launch count, max error and time (compared with the baselines)."""
    tag, sizes, device, bench = ctx
    result: dict[str, Any] = {}
    ir, result["configs"] = configure(base, overrides)
    source = generate(task, ir)
    module = load_program(Program(source), tag)
    for key, value in sizes.items():  # as the verifier does: the program's own copies of the sizes
        if hasattr(module, key):
            setattr(module, key, value)
    torch.manual_seed(0)
    candidate = module.ModelNew(*task.init_inputs(sizes)).to(device)
    candidate.load_state_dict(reference.state_dict())
    with torch.no_grad():
        result["recurrent_launches"] = recurrent_launches(module, source, lambda: candidate(*inputs))
        result["max_err"] = max_error(candidate(*inputs), expected)
        result["ms"] = bench(lambda: candidate(*inputs))
    result["vs_eager_tf32"] = row["eager_tf32_ms"] / result["ms"]
    result["vs_eager_ieee"] = row["eager_ieee_ms"] / result["ms"]
    if "compile_ms" in row:
        result["vs_compile"] = row["compile_ms"] / result["ms"]
    return result


def probe_task(coder: TemplateCoder, path: Path, variants: list[tuple[str, dict]], args, clock) -> dict:
    task = task_from_file(path)
    cpu = args.cpu_dry_run
    device = "cpu" if cpu else "cuda"
    sizes = task_sizes(task, args)
    bench = timer(cpu)
    row: dict[str, Any] = {"task": path.stem, "sizes": sizes}
    reference = task.make_model(seed=0, sizes=sizes).to(device)
    inputs = on(device, task.make_inputs(seed=1, sizes=sizes))
    expected = baselines(row, reference, inputs, args, bench)
    base = ProgramIR.from_dict(coder.apply(task, None, PORT).metadata["template_ir"])
    row["variants"] = {}
    for name, overrides in variants:
        if clock() > args.time_limit:
            row["variants"][name] = {"skipped": "time limit"}
            continue
        ctx = (f"{path.stem}_{name}".replace("-", "_"), sizes, device, bench)
        try:
            row["variants"][name] = run_variant(task, base, overrides, reference, inputs, expected, row, ctx)
        except Exception as err:  # a compile or launch failure is a result to report, not a crash
            row["variants"][name] = {"error": f"{type(err).__name__}: {str(err)[:300]}",
                                     "trace": traceback.format_exc()[-1500:]}
        if not cpu:
            torch.cuda.synchronize()
    return row


def print_row(row: dict) -> None:
    if "error" in row or "skipped" in row:
        print(f"{row['task']}: {row.get('error') or row.get('skipped')}", flush=True)
        return
    print(f"{row['task'][:60]}: eager tf32 {row['eager_tf32_ms']:.3f} ms, "
          f"ieee {row['eager_ieee_ms']:.3f} ms, compile {row.get('compile_ms', float('nan')):.3f} ms; "
          f"eager tf32 err {row['eager_tf32_err']:.1e}",
          flush=True)
    for name, r in row["variants"].items():
        if "ms" in r:
            print(f"    {name:24s} {r['ms']:9.3f} ms  x{r['vs_eager_tf32']:.2f} eager-tf32  "
                  f"x{r['vs_eager_ieee']:.2f} eager-ieee  x{r.get('vs_compile', float('nan')):.2f} compile  "
                  f"err {r['max_err']:.1e}  launches {r['recurrent_launches']}", flush=True)
        else:
            print(f"    {name:24s} {r.get('skipped') or r.get('error', '')[:150]}", flush=True)


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
    parser.add_argument("--tasks", nargs="+", default=RNN_TASKS,
                        help="task file names or their prefixes (default: level 3's LSTMs and GRUs)")
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    parser.add_argument("--time-limit", type=float, default=500.0, help="seconds; later variants are skipped")
    parser.add_argument("--variants", default=None, help="';'-separated name:key=value,... (default: a menu)")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile baseline")
    parser.add_argument("--sizes", default=None, help="JSON size overrides for every task")
    parser.add_argument("--cpu-dry-run", action="store_true", help="small sizes on the CPU interpreter")
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
            row = {"task": path.stem, "skipped": "time limit"}
        else:
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
        print(f"{name:24s} {entry['tasks']} tasks  geomean {geo}")


if __name__ == "__main__":
    main()
