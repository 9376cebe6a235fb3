"""Probe the template coder's pool kernels on a GPU: the rows form against the older forms (issue 22).

    python benchmarks/probes/2026-11-27-pool/run.py --tasks-dir .kb/l1 \
        --tasks 41_ 42_ 43_ 44_ 45_ 46_ --out $OUT/pool.json --time-limit 190

As 2026-11-26-pool/run.py (whose helpers it imports: the error, the copy bandwidth, the eager and
torch.compile baselines, the dry-run sizes), with the rows form (coders/template/emit/pool_rows.py,
the port's form since 7d70243) among the variants. A variant is `name:key=value,...` over the pool
kernels' configs: form (flat | tile | rows), BLOCK, BLOCK_M, BLOCK_N, vector (1 on, 0 off), BAND
(the rows form's output rows per program; unset: the launcher's choice), slide (the rows form's
slide, emit/pool_slide.py: output rows per loop step; unset or 0: the ring), num_warps. Keys a variant
does not name keep the port's values (the port's `vector` included, so `rows-128-w4` on 45 keeps its
vector taps).

The time limit is shared out: each task may use the time left over the tasks left, so every task
gets its first variants timed (the port and the old port first) and the run stops itself at
--time-limit; a variant past its task's share is recorded as skipped.
"""

from __future__ import annotations

import copy
import importlib.util
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
from mtmc.tasks.task import task_from_file  # noqa: E402


def _previous_probe():
    """2026-11-26-pool/run.py as a module (its folder's name is not a package name)."""
    path = Path(__file__).resolve().parents[1] / "2026-11-26-pool" / "run.py"
    spec = importlib.util.spec_from_file_location("pool_probe_2026_11_26", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


previous = _previous_probe()

# most telling first (a task's share of the time may end before the last ones)
VARIANTS = [
    "port:",  # the rows form where it applies (41-46 all), its strip and vector taps as the port picks
    "flat-512-w4:form=flat,BLOCK=512,num_warps=4",  # the port before the rows form
    "rows-port-w8:form=rows,num_warps=8",
    "rows-128-w4:form=rows,BLOCK_N=128,num_warps=4",
    "rows-256-w4:form=rows,BLOCK_N=256,num_warps=4",
    "rows-1024-w8:form=rows,BLOCK_N=1024,num_warps=8",
    "rows-port-band16:form=rows,BAND=16",
    "rows-port-vec:form=rows,vector=1",
    "rows-port-novec:form=rows,vector=0",
    "tile-8x128-w4:form=tile,BLOCK_M=8,BLOCK_N=128,num_warps=4,vector=0",  # 42's and 46's best before
    "vec-4x64-w4:form=tile,vector=1,BLOCK_M=4,BLOCK_N=64,num_warps=4",  # 41's and 43's best before
    "flat-1024-w8:form=flat,BLOCK=1024,num_warps=8",  # 44's and 45's best before
]

ROWS_NOMINAL = 16  # BLOCK of the rows form: what steps.programs assumes (pool_forms.BAND_NOMINAL)


def configure(ir: ProgramIR, overrides: dict[str, Any]) -> tuple[ProgramIR, list[dict]]:
    """A copy of `ir` with the overrides on every pool kernel; the pool kernels' configs. A variant
    whose form or vector taps do not apply (indices, adaptive) fails rather than run another form."""
    ir = ProgramIR.from_dict(ir.to_dict())
    pools = [k for k in ir.kernels() if k.kind == "pool"]
    if not pools:
        raise ValueError("the program has no pool kernel")
    for kernel in pools:
        cfg = {k: v for k, v in kernel.config.items() if k != "autotune"}
        cfg.update(overrides)
        form = cfg.get("form", "flat")
        drop = {"tile": ("BAND", "slide"), "rows": ("BLOCK_M",),
                "flat": ("BLOCK_M", "BLOCK_N", "vector", "BAND", "slide")}[form]
        for key in drop + (("vector",) if not cfg.get("vector") else ()):
            cfg.pop(key, None)
        if form == "tile":
            cfg["BLOCK"] = cfg["BLOCK_M"] * cfg["BLOCK_N"]
        elif form == "rows":
            cfg["BLOCK"] = cfg["BLOCK_N"] * ROWS_NOMINAL
        kernel.config = cfg
        if not cfg.get("slide"):
            cfg.pop("slide", None)
        if form == "rows" and not pool_emit.is_rows(kernel):
            raise ValueError("the rows form needs a fixed window and no return_indices")
        if cfg.get("vector") and not pool_emit.is_vector(kernel):
            raise ValueError("vector taps need a fixed window and no return_indices")
    return ir, [dict(k.config) for k in pools]


def probe_task(coder: TemplateCoder, path: Path, variants: list[tuple[str, dict]], args, clock) -> dict:
    """As the previous probe's, with this task's share of the time left as its limit."""
    share = copy.copy(args)
    share.time_limit = clock() + max(0.0, args.time_limit - clock()) / max(1, args.tasks_left)
    args.tasks_left -= 1
    task = task_from_file(path)
    device = "cpu" if args.cpu_dry_run else "cuda"
    sizes = harness.sizes_of(task, args, dry=previous.dry_sizes)
    bench = harness.timer(args.cpu_dry_run, args.warmup, args.rep)
    row: dict[str, Any] = {"task": path.stem, "sizes": sizes}
    reference = task.make_model(seed=0, sizes=sizes).to(device)
    with torch.device(device):  # the task's get_inputs makes its tensors on the device
        inputs = task.make_inputs(seed=1, sizes=sizes)
    with torch.no_grad():
        expected = reference(*inputs)
        previous.baselines(row, reference, inputs, expected, args, bench, device)
    base = harness.fused_ir(coder, task)
    row["kernels"] = [k.kind for k in base.kernels()]
    row["port_configs"] = [dict(k.config) for k in base.kernels() if k.kind == "pool"]
    harness.probe_variants(row, variants, share, clock, lambda name, overrides: previous.probe_variant(
        task, path, base, name, overrides, reference, inputs, expected, row, bench, device, configure))
    return row


def summary(rows: list[dict]) -> dict[str, Any]:
    """The previous probe's summary (per variant geomeans, per task the best), and per task the
    port's time against the old port's (flat-512-w4)."""
    out = previous.summary(rows)
    out["port_vs_old_port"] = {
        r["task"]: r["variants"]["flat-512-w4"]["ms"] / r["variants"]["port"]["ms"]
        for r in rows if all("ms" in r.get("variants", {}).get(n, {}) for n in ("port", "flat-512-w4"))}
    return out


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__, time_limit=190.0, time_help="seconds, shared out over the tasks")
    parser.add_argument("--bandwidth", type=float, default=3.0e12, help="nominal bytes/s for nominal_pct")
    parser.add_argument("--warmup", type=int, default=10, help="do_bench warm-up, ms")
    parser.add_argument("--rep", type=int, default=40, help="do_bench repetition time, ms")
    harness.add_dry_run(parser, "small sizes on the CPU interpreter")
    args = parser.parse_args(argv)
    args.tasks_left = len(harness.find_tasks(args.tasks_dir, args.tasks))
    run_meta = harness.meta(args, nominal_bandwidth=args.bandwidth,
                            do_bench={"warmup_ms": args.warmup, "rep_ms": args.rep, "return_mode": "median"})
    result = summary(harness.probe_tasks(args, VARIANTS, probe_task, previous.print_row, summary, run_meta))
    harness.print_geomeans(result["variants"], width=18, unit="")
    for task, best in result["best"].items():
        print(f"best {task}: {best['variant']} {best['floor_pct']:.1f}% floor")
    for task, ratio in result["port_vs_old_port"].items():
        print(f"port {task}: x{ratio:.2f} the old port (flat 512)")


if __name__ == "__main__":
    main()
