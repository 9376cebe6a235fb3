"""Probe the template coder's split sums on KernelBench level-1 losses that reduce a whole tensor to a
scalar (98_KLDivLoss, 96_HuberLoss, 100_HingeLoss): programs an SM, values a thread, splits, and the
`fast_log` key, against torch.compile.

    python benchmarks/probes/2026-12-02-loss/run.py --tasks-dir .kb/l1 --tasks 98_ 96_ 100_ \
        --out $OUT/loss.json --time-limit 150

For each task it ports the task with the template coder and takes every fusion (`latest`: the port
with `fuse prologue`, one split pass over the inputs), then for each variant of its menu (MENUS, the
baseline first) sets the config of the program's split reduce kernels (keys: BLOCK, num_warps,
split_k, fast_log; `program=port` runs the port without the fusions instead, 98's benched program),
checks the result against eager PyTorch (max |error|) and against eager on float64 inputs (`err64`,
beside eager's own `eager_err64`), and times it with triton.testing.do_bench (median) against eager,
torch.compile and the memory floor (inputs read once at the bandwidth of a device-to-device copy in
the same run: 2026-11-26-pool's baselines). The JSON is rewritten after each task; a failing variant
is recorded and skipped. --time-limit counts from this script's first line, imports included; a
variant or task that would start past it less MARGIN is skipped.

--cpu-dry-run checks the script's logic on the CPU interpreter (TRITON_INTERPRET=1, set here) at
DRY_SIZES (or --sizes), one timing repeat, no torch.compile: the programs traced at the KernelBench
sizes (their BLOCK and SPLIT) run on the small inputs, so most of a large split's slices are empty.
"""

from __future__ import annotations

import time

START = time.monotonic()  # --time-limit counts from here: the imports are in it

import os  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

if "--cpu-dry-run" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository: benchmarks/ is not installed

import torch  # noqa: E402

from benchmarks.probes import harness  # noqa: E402
from benchmarks.probes.load import load_probe  # noqa: E402
from coders.template.ir import ProgramIR  # noqa: E402
from mtmc.strategies import PORT  # noqa: E402
from mtmc.tasks.task import task_from_file  # noqa: E402

pool26 = load_probe("2026-11-26-pool")  # the copy-bandwidth floor, eager and compile baselines, summary

MARGIN = 10.0  # seconds kept for the last variant started (a compile of 1-3 s, do_bench) and the exit
KEYS = ("BLOCK", "num_warps", "split_k", "fast_log")
DRY_SIZES = {"batch_size": 333, "input_shape": [333]}  # 100's targets span the last dim: batch = columns
NOMINAL = {"H200": 4.8e12, "H100": 3.35e12}  # bytes/s for nominal_pct, by device name

# per task, the baseline first (README: why each). Registers and programs an SM are sm_90 compiles
# (Triton 3.6) at the KernelBench sizes: wN = num_warps, bB = BLOCK, sS = split_k (SPLIT programs)
MENUS = {
    # KLDivLoss, 2 x [16384, 16384]: the benched program is the port (elementwise kernel writing 1 GiB,
    # then the split sum over it: 4 GiB moved); latest reads 2 GiB once, 200 registers, 8 warps an SM,
    # 70 instructions a value (two libdevice logs)
    "98_": ["port:program=port",
            "latest:",
            "w16:num_warps=16",
            "fl:fast_log=1",
            "fl-w16:fast_log=1,num_warps=16",
            "fl-b4096-w8-s528:fast_log=1,BLOCK=4096,num_warps=8,split_k=528",
            "fl-b2048-w4-s1056:fast_log=1,BLOCK=2048,num_warps=4,split_k=1056"],
    # HuberLoss, 2 x [32768, 32768]: latest (the port + fuse prologue) 168 registers, 8 warps an SM
    "96_": ["latest:",
            "w16:num_warps=16",
            "b4096-w8-s528:BLOCK=4096,num_warps=8,split_k=528",
            "b2048-w4-s1056:BLOCK=2048,num_warps=4,split_k=1056",
            "b2048-w8-s792:BLOCK=2048,num_warps=8,split_k=792",
            "b2048-w8-s8192:BLOCK=2048,num_warps=8,split_k=8192"],
    # HingeLoss, [32768, 32768] x targets [32768] over the last dim: latest 168 registers, 8 warps an SM
    "100_": ["latest:",
             "w16:num_warps=16",
             "b4096-w8-s528:BLOCK=4096,num_warps=8,split_k=528",
             "b2048-w8-s1056:BLOCK=2048,num_warps=8,split_k=1056",
             "b2048-w4-s1056:BLOCK=2048,num_warps=4,split_k=1056"],
}


def menu_of(stem: str) -> list[str]:
    return next((m for prefix, m in MENUS.items() if stem.startswith(prefix)), ["latest:"])


def split_kernels(ir: ProgramIR) -> list:
    """The reduce kernels the port split (reduce_split.py): the ones a variant configures."""
    return [k for k in ir.kernels() if k.kind == "reduce" and k.config.get("split_k", 1) > 1]


def configure(programs: dict[str, ProgramIR], overrides: dict[str, Any]) -> tuple[ProgramIR, list[dict]]:
    """A copy of the program the variant names (`latest` unless `program=port`) with its knobs on every
    split reduce kernel; their configs."""
    knobs = {k: v for k, v in overrides.items() if k != "program"}
    unknown = set(knobs) - set(KEYS)
    if unknown:
        raise ValueError(f"unknown keys {sorted(unknown)}: a variant sets {', '.join(KEYS)} or program")
    ir = ProgramIR.from_dict(programs[overrides.get("program", "latest")].to_dict())
    kernels = split_kernels(ir)
    if knobs and not kernels:
        raise ValueError("no split reduce kernel to configure")
    for kernel in kernels:
        kernel.config.update(knobs)
        kernel.config.pop("autotune", None)
        if "BLOCK" in knobs:
            kernel.config.pop("auto_block", None)  # as a `tile` step does: the block is the variant's
    return ir, [dict(k.config, kernel=k.name) for k in kernels]


def relative_error(got: Any, exact: torch.Tensor) -> float:
    """|got - exact| / |exact| for a scalar loss (max over the elements otherwise)."""
    got = got.double()
    return float(((got - exact).abs() / exact.abs().clamp_min(1e-300)).max())


def exact_of(reference, inputs: list) -> torch.Tensor:
    """The reference on float64 copies of the inputs (freed before the variants run)."""
    doubled = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs]
    with torch.no_grad():
        exact = reference(*doubled)
    del doubled
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return exact


def probe_variant(task, path: Path, programs: dict, name: str, overrides: dict, ctx: dict) -> dict:
    """One variant's error (against eager and float64), time, floor share and speedups."""
    row, bench = ctx["row"], ctx["bench"]
    result: dict[str, Any] = {}
    try:
        ir, result["configs"] = configure(programs, overrides)
        module = harness.load(task, ir, path, name)[1]
        candidate = harness.instantiate(module, task, row["sizes"], ctx["reference"], ctx["device"])
        with torch.no_grad():
            result["err64"] = relative_error(candidate(*ctx["inputs"]), ctx["exact"])
        result.update(harness.measure(candidate, ctx["inputs"], ctx["expected"], bench,
                                      error=pool26.max_error))
        harness.floor_shares(result, row)
    except Exception as err:  # a compile or launch failure is a result to report, not a crash
        result.update(harness.failure(err))
    return result


def probe_task(coder, path: Path, variants: list[tuple[str, dict]], args, clock) -> dict:
    """Eager (fp32 and float64), the copy floor and torch.compile once, then the task's menu."""
    if not args.variants:
        variants = [harness.parse_variant(v) for v in menu_of(path.stem)]
    task = task_from_file(path)
    device = "cpu" if args.cpu_dry_run else "cuda"
    sizes = harness.sizes_of(task, args, dry=lambda task: dict(DRY_SIZES))
    row: dict[str, Any] = {"task": path.stem, "sizes": sizes}
    reference = task.make_model(seed=0, sizes=sizes).to(device)
    with torch.device(device):  # the task's get_inputs makes its tensors on the device
        inputs = task.make_inputs(seed=1, sizes=sizes)
    exact = exact_of(reference, inputs)
    bench = harness.timer(args.cpu_dry_run, args.warmup, args.rep)
    with torch.no_grad():
        expected = reference(*inputs)
        row["eager_err64"] = relative_error(expected, exact)
        pool26.baselines(row, reference, inputs, expected, args, bench, device)
    programs = {"latest": harness.fused_ir(coder, task),
                "port": ProgramIR.from_dict(coder.apply(task, None, PORT).metadata["template_ir"])}
    row["kernels"] = {k: [kernel.kind for kernel in ir.kernels()] for k, ir in programs.items()}
    ctx = {"row": row, "bench": bench, "reference": reference, "inputs": inputs, "expected": expected,
           "exact": exact, "device": device}
    harness.probe_variants(row, variants, args, clock, lambda name, overrides: probe_variant(
        task, path, programs, name, overrides, ctx))
    return row


def print_row(row: dict) -> None:
    """2026-11-26-pool's table, then each variant's float64 error beside eager's."""
    pool26.print_row(row)
    if "variants" in row:
        errors = ", ".join(f"{n} {r['err64']:.1e}" for n, r in row["variants"].items() if "err64" in r)
        print(f"    relative error against float64: eager {row['eager_err64']:.1e}; {errors}", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__, time_limit=150.0, time_help="seconds of wall time in all, imports "
                            "included")
    parser.add_argument("--bandwidth", type=float, default=None, help="nominal bytes/s for nominal_pct "
                        "(default: 4.8e12 on an H200, else 3.35e12)")
    parser.add_argument("--warmup", type=int, default=10, help="do_bench warm-up, ms")
    parser.add_argument("--rep", type=int, default=40, help="do_bench repetition time, ms")
    harness.add_dry_run(parser, "small sizes on the CPU interpreter")
    args = parser.parse_args(argv)
    wall = args.time_limit
    args.time_limit = max(0.0, wall - (time.monotonic() - START) - MARGIN)  # from probe_tasks' clock
    name = "cpu" if args.cpu_dry_run else torch.cuda.get_device_name()
    args.bandwidth = args.bandwidth or next((v for k, v in NOMINAL.items() if k in name), NOMINAL["H100"])
    run_meta = harness.meta(args, nominal_bandwidth=args.bandwidth, wall_limit_s=wall,
                            do_bench={"warmup_ms": args.warmup, "rep_ms": args.rep, "return_mode": "median"})
    menu = [v for m in MENUS.values() for v in m]
    rows = harness.probe_tasks(args, menu, probe_task, print_row, pool26.summary, run_meta)
    result = pool26.summary(rows)
    for task, best in result["best"].items():
        print(f"best {task}: {best['variant']} {best['floor_pct']:.1f}% floor")
    print(f"wall {time.monotonic() - START:.1f} s (limit {wall:.0f} s)")


if __name__ == "__main__":
    main()
