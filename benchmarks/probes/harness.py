"""What the template coder's probe scripts share (2026-11-26-conv, -pool, -rnn): finding tasks,
reading variants, the eager and torch.compile baselines, timing, and the loop that probes each
task and rewrites the JSON after it.

A variant is `name:key=value,...` (values that are digits are ints); `--variants` takes several,
';'-separated. Each script overrides its own kind of kernel's config with a variant's values.

Each script sets TRITON_INTERPRET=1 for --cpu-dry-run itself, before its first import of triton
(this module's included), and puts the repository on sys.path before importing this module.
"""

from __future__ import annotations

import argparse
import json
import math
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import triton

from benchmarks.gpu_bench import load_program
from coders.template import TemplateCoder
from coders.template.emit.module import generate
from coders.template.ir import ProgramIR
from mtmc.program import Program
from mtmc.strategies import PORT
from mtmc.tasks import Task
from mtmc.tasks.task import task_from_file

EAGER_FLAGS = ("eager_tf32: cudnn.allow_tf32=True (default), eager_ieee: False; "
               "cuda.matmul.allow_tf32=False in both; torch.compile with the defaults")
SPEEDUPS = ("vs_eager_tf32", "vs_eager_ieee", "vs_compile")  # over the eager_baselines

# --------------------------------------------------------------------------------------------------
# the command line
# --------------------------------------------------------------------------------------------------

def parser(doc: str, time_limit: float, time_help: str, tasks_default: list[str] | None = None,
           tasks_help: str = "task file names or their prefixes") -> argparse.ArgumentParser:
    """The flags every probe takes; a script adds its own, then add_dry_run's."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--tasks-dir", type=Path, required=True)
    if tasks_default is None:
        parser.add_argument("--tasks", nargs="+", required=True, help=tasks_help)
    else:
        parser.add_argument("--tasks", nargs="+", default=tasks_default, help=tasks_help)
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    parser.add_argument("--time-limit", type=float, default=time_limit, help=time_help)
    parser.add_argument("--variants", default=None, help="';'-separated name:key=value,... (default: a menu)")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile baseline")
    parser.add_argument("--sizes", default=None, help="JSON size overrides for every task")
    return parser


def add_dry_run(parser: argparse.ArgumentParser, help: str) -> None:
    parser.add_argument("--cpu-dry-run", action="store_true", help=help)


def parse_variant(text: str) -> tuple[str, dict[str, Any]]:
    name, _, body = text.partition(":")
    overrides: dict[str, Any] = {}
    for item in filter(None, body.split(",")):
        key, _, value = item.partition("=")
        overrides[key.strip()] = int(value) if value.strip().isdigit() else value.strip()
    return name, overrides


def variants_of(args, menu: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """--variants, else the script's menu, parsed."""
    return [parse_variant(v) for v in (args.variants.split(";") if args.variants else menu)]


def find_tasks(folder: Path, prefixes: list[str]) -> list[Path]:
    files = sorted(folder.glob("*.py"))
    found = []
    for prefix in prefixes:
        match = [f for f in files if f.stem == prefix] or [f for f in files if f.stem.startswith(prefix)]
        if not match:
            raise SystemExit(f"no task in {folder} starts with {prefix!r}")
        found += [f for f in match if f not in found]
    return found


def sizes_of(task: Task, args, dry: Callable[[Task], dict]) -> dict[str, Any]:
    """--sizes, else the full sizes on a GPU, else the dry run's (`dry(task)`)."""
    if args.sizes:
        return json.loads(args.sizes)
    if not args.cpu_dry_run:
        return {}
    return dry(task)

# --------------------------------------------------------------------------------------------------
# programs, baselines and timing
# --------------------------------------------------------------------------------------------------

def fused_ir(coder: TemplateCoder, task: Task) -> ProgramIR:
    """The port with every fusion applied, one after another."""
    program = coder.apply(task, None, PORT)
    while fusions := [s for s in coder.legal_strategies(task, program) if s.kind == "fuse"]:
        program = coder.apply(task, program, fusions[0])
    return ProgramIR.from_dict(program.metadata["template_ir"])


def load(task: Task, ir: ProgramIR, path: Path, variant: str) -> tuple[str, Any]:
    """The program of `ir` (source and module), its module named after the task and the variant."""
    source = generate(task, ir)
    return source, load_program(Program(source), f"{path.stem}_{variant}".replace("-", "_"))


def instantiate(module, task: Task, sizes: dict, reference, device: str):
    """The program's ModelNew as the verifier builds it: seeded, with the reference's weights."""
    torch.manual_seed(0)
    candidate = module.ModelNew(*task.init_inputs(sizes)).to(device)
    candidate.load_state_dict(reference.state_dict())
    return candidate


def measure(candidate, inputs: list, expected: Any, bench, error: Callable | None = None) -> dict[str, float]:
    """A candidate's max error against the expected values (`error`, else max_error) and its time."""
    with torch.no_grad():
        return {"max_err": (error or max_error)(candidate(*inputs), expected),
                "ms": bench(lambda: candidate(*inputs))}


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


def timer(cpu: bool, warmup: int | None = None, rep: int | None = None):
    """Milliseconds of one call: do_bench's median on a GPU (its own warmup and rep unless given);
    on the CPU one timed call after a warm-up (interpreter caches)."""
    if cpu:
        def once(fn) -> float:
            fn()
            start = time.perf_counter()
            fn()
            return (time.perf_counter() - start) * 1e3
        return once
    budget = {k: v for k, v in (("warmup", warmup), ("rep", rep)) if v is not None}
    return lambda fn: triton.testing.do_bench(fn, **budget, return_mode="median")


def set_tf32(conv: bool) -> None:
    """cuDNN's convolutions and RNNs follow cudnn.allow_tf32 (on by default); matmuls stay strict."""
    torch.backends.cudnn.allow_tf32 = conv
    torch.backends.cuda.matmul.allow_tf32 = False


def eager_baselines(row: dict, reference, inputs: list, args, bench) -> Any:
    """Eager with cuDNN TF32 off (the expected values) and on (PyTorch's default), and
    torch.compile, timed into `row`; returns the expected values."""
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
                row["compile_error"] = described(err)
        set_tf32(False)
    return expected


def speedups(result: dict, row: dict) -> None:
    """A variant's speedups over the eager_baselines in `row`."""
    result["vs_eager_tf32"] = row["eager_tf32_ms"] / result["ms"]
    result["vs_eager_ieee"] = row["eager_ieee_ms"] / result["ms"]
    if "compile_ms" in row:
        result["vs_compile"] = row["compile_ms"] / result["ms"]


def floor_shares(result: dict, row: dict) -> None:
    """A memory-bound variant's speedups over eager (and torch.compile where timed) and its share of
    the memory floor, at the measured copy bandwidth (`floor_pct`) and at the nominal (`nominal_pct`)."""
    result["vs_eager"] = row["eager_ms"] / result["ms"]
    result["floor_pct"] = 100 * row["floor_ms"] / result["ms"]
    result["nominal_pct"] = 100 * row["nominal_floor_ms"] / result["ms"]
    if "compile_ms" in row:
        result["vs_compile"] = row["compile_ms"] / result["ms"]


def described(err: Exception) -> str:
    return f"{type(err).__name__}: {str(err)[:300]}"


def failure(err: Exception) -> dict[str, str]:
    """A failure as a result to report, not a crash: the error and the end of its traceback."""
    return {"error": described(err), "trace": traceback.format_exc()[-1500:]}

# --------------------------------------------------------------------------------------------------
# the probe loop and its summary
# --------------------------------------------------------------------------------------------------

def probe_variants(row: dict, variants: list[tuple[str, dict]], args, clock, run) -> None:
    """row["variants"][name] = run(name, overrides) for each variant until the time limit."""
    row["variants"] = {}
    for name, overrides in variants:
        if clock() > args.time_limit:
            row["variants"][name] = {"skipped": "time limit"}
            continue
        row["variants"][name] = run(name, overrides)
        if not args.cpu_dry_run:
            torch.cuda.synchronize()


def configured_task(coder: TemplateCoder, path: Path, variants: list[tuple[str, dict]], args, clock,
                    configure: Callable[[ProgramIR, dict], tuple[ProgramIR, list[dict]]]) -> dict:
    """One task of a probe that reconfigures the fused port's kernels per variant: `configure(ir,
    overrides)` gives the variant's program and the configs it set; eager (and torch.compile) once,
    then each variant checked against eager and timed."""
    task = task_from_file(path)
    device = "cpu" if args.cpu_dry_run else "cuda"
    sizes = sizes_of(task, args, dry=lambda task: task.sizes("cpu")[0])
    bench = timer(args.cpu_dry_run)
    row: dict[str, Any] = {"task": path.stem, "sizes": sizes}
    reference = task.make_model(seed=0, sizes=sizes).to(device)
    inputs = on(device, task.make_inputs(seed=1, sizes=sizes))
    expected = eager_baselines(row, reference, inputs, args, bench)
    base = fused_ir(coder, task)

    def run(name: str, overrides: dict) -> dict:
        result: dict[str, Any] = {}
        try:
            ir, result["configs"] = configure(base, overrides)
            module = load(task, ir, path, name)[1]
            candidate = instantiate(module, task, sizes, reference, device)
            result.update(measure(candidate, inputs, expected, bench))
            speedups(result, row)
        except Exception as err:  # a compile or launch failure is a result to report, not a crash
            result.update(failure(err))
        return result

    probe_variants(row, variants, args, clock, run)
    return row


def meta(args, **extra) -> dict[str, Any]:
    """The run's device and versions, then `extra`."""
    return {"device": "cpu" if args.cpu_dry_run else torch.cuda.get_device_name(),
            "torch": torch.__version__, "triton": triton.__version__, **extra}


def probe_tasks(args, menu: list[str], probe_task, print_row, summary, run_meta: dict,
                write_skipped: bool = False) -> list[dict]:
    """Probe each task (`probe_task(coder, path, variants, args, clock)`), print its row and rewrite
    the JSON after it. Past --time-limit a task is skipped: with `write_skipped` its row is printed
    and written like the others (rnn); without, one line says so and the JSON is not rewritten, so
    the file never shows the skipped tasks (conv and pool, as they always did)."""
    variants = variants_of(args, menu)
    start = time.monotonic()
    clock = lambda: time.monotonic() - start  # noqa: E731
    coder = TemplateCoder()
    rows: list[dict] = []
    for path in find_tasks(args.tasks_dir, args.tasks):
        if clock() > args.time_limit:
            row = {"task": path.stem, "skipped": "time limit"}
            if not write_skipped:
                rows.append(row)
                print(f"{path.stem}: skipped (time limit)", flush=True)
                continue
        else:
            try:
                row = probe_task(coder, path, variants, args, clock)
            except Exception as err:
                row = {"task": path.stem, **failure(err)}
        row["elapsed_s"] = round(clock(), 1)
        rows.append(row)
        print_row(row)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"meta": run_meta, "rows": rows, "summary": summary(rows)}, indent=1))
        if not args.cpu_dry_run:
            torch.cuda.empty_cache()
    return rows


def geomeans(rows: list[dict], keys: tuple[str, ...]) -> dict[str, dict]:
    """Per variant: the tasks measured and the geomean of each of `keys` over them."""
    out: dict[str, dict] = {}
    names = dict.fromkeys(n for r in rows for n in r.get("variants", {}))
    for name in names:
        measured = [r["variants"][name] for r in rows if "ms" in r.get("variants", {}).get(name, {})]
        entry: dict[str, Any] = {"tasks": len(measured)}
        for key in keys:
            values = [m[key] for m in measured if key in m]
            if values:
                entry[key] = math.exp(sum(math.log(v) for v in values) / len(values))
        out[name] = entry
    return out


def speedups_head(row: dict) -> str:
    """A task's eager_baselines, in words."""
    return (f"{row['task'][:60]}: eager tf32 {row['eager_tf32_ms']:.3f} ms, "
            f"ieee {row['eager_ieee_ms']:.3f} ms, compile {row.get('compile_ms', float('nan')):.3f} ms; "
            f"eager tf32 err {row['eager_tf32_err']:.1e}")


def speedups_line(r: dict) -> str:
    """A variant's time, its speedups over the eager_baselines and its error, in words."""
    return (f"{r['ms']:9.3f} ms  x{r['vs_eager_tf32']:.2f} eager-tf32  "
            f"x{r['vs_eager_ieee']:.2f} eager-ieee  x{r.get('vs_compile', float('nan')):.2f} compile  "
            f"err {r['max_err']:.1e}")


def print_variants(row: dict, width: int, timed: Callable[[dict], str]) -> None:
    """A line per variant: `timed(result)` for a timed one, else why it has no time."""
    for name, r in row["variants"].items():
        if "ms" in r:
            print(f"    {name:{width}s} {timed(r)}", flush=True)
        else:
            print(f"    {name:{width}s} {r.get('skipped') or r.get('error', '')[:150]}", flush=True)


def print_geomeans(entries: dict[str, dict], width: int, unit: str = "x") -> None:
    for name, entry in entries.items():
        geo = "  ".join(f"{k} {v:.2f}{unit}" for k, v in entry.items() if k != "tasks")
        print(f"{name:{width}s} {entry['tasks']} tasks  geomean {geo}")
