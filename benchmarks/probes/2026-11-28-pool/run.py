"""Probe the template coder's pool kernels on a GPU: the rows form's shifted taps (issue 22).

    python benchmarks/probes/2026-11-28-pool/run.py --tasks-dir .kb/l1 \
        --tasks 41_ 44_ 42_ 43_ --out $OUT/pool-shift.json --time-limit 150 --no-compile

As 2026-11-27-pool/run.py (whose configure and probe_task it wraps; the error, the copy bandwidth,
the floor and the dry-run sizes are 2026-11-26-pool's), with the key `shift` (G: outputs per thread
group; coders/template/emit/pool_shift.py, off in the port) among a variant's keys, and a menu per
task (MENUS, the most promising first). Keys a variant does not name keep the port's values.

--time-limit is the whole run's wall time, imports included: the script stops starting variants
MARGIN seconds before it (the last variant's compile and timing), and shares the rest out over the
tasks as 2026-11-27-pool does.
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

from benchmarks.probes import harness  # noqa: E402
from coders.template.emit import pool_shift  # noqa: E402
from coders.template.ir import ProgramIR  # noqa: E402

MARGIN = 12.0  # seconds kept for the last variant started (a compile of 1-4 s, do_bench) and the exit


from benchmarks.probes.load import load_probe as _probe  # noqa: E402

previous = _probe("2026-11-27-pool")  # loads 2026-11-26-pool's too (previous.previous)
configure_27 = previous.configure

# per task, the most promising first. A strip is G x 32 x num_warps columns (one group per thread: a
# narrower strip replicates the groups over threads, and compiled for sm_90 takes layout conversions)
MENUS = {
    # 41 MaxPool1d k8 s1 p4 d3 (row 65536 -> 65523): 8 chunks (LDG.128) per 8 outputs
    "41_": ["port:",
            "sh8-1024-w4:form=rows,BLOCK_N=1024,num_warps=4,shift=8",
            "sh4-512-w4:form=rows,BLOCK_N=512,num_warps=4,shift=4",
            "sh8-1024-w4-s2:form=rows,BLOCK_N=1024,num_warps=4,shift=8,slide=2",
            "sh16-2048-w4:form=rows,BLOCK_N=2048,num_warps=4,shift=16",
            "sh8-2048-w8:form=rows,BLOCK_N=2048,num_warps=8,shift=8",
            "rows-1024-w4:form=rows,BLOCK_N=1024,num_warps=4"],
    # 44 AvgPool1d k8 s1 p4 (row 65536 -> 65537): 4 chunks per 8 outputs
    "44_": ["port:",
            "sh8-1024-w4:form=rows,BLOCK_N=1024,num_warps=4,shift=8",
            "sh4-512-w4:form=rows,BLOCK_N=512,num_warps=4,shift=4",
            "sh8-1024-w4-s2:form=rows,BLOCK_N=1024,num_warps=4,shift=8,slide=2",
            "sh16-2048-w4:form=rows,BLOCK_N=2048,num_warps=4,shift=16",
            "sh8-2048-w8:form=rows,BLOCK_N=2048,num_warps=8,shift=8"],
    # 42 MaxPool2d k4 s1 p1 (511 x 511 out): the slide's rows from 3 chunks per 4 outputs
    "42_": ["port:",
            "sh4-512-w4-s2:form=rows,BLOCK_N=512,num_warps=4,shift=4,slide=2",
            "sh4-128-w1-s2:form=rows,BLOCK_N=128,num_warps=1,shift=4,slide=2",
            "sh4-256-w2-s2:form=rows,BLOCK_N=256,num_warps=2,shift=4,slide=2",
            "sh4-512-w4-s4:form=rows,BLOCK_N=512,num_warps=4,shift=4,slide=4",
            "sh8-512-w2-s2:form=rows,BLOCK_N=512,num_warps=2,shift=8,slide=2"],
    # 43 MaxPool3d k3 s2 p1 d3 (62^3 out): one warp per 64-column strip, each input row once per
    # program (the slide's queue of 7 rows), 3 chunks per 2 outputs per depth tap
    "43_": ["port:",
            "sh2-64-w1-s2:form=rows,BLOCK_N=64,num_warps=1,shift=2,slide=2",
            "rows-64-w1-s2:form=rows,BLOCK_N=64,num_warps=1,slide=2",
            "sh2-64-w1-s4:form=rows,BLOCK_N=64,num_warps=1,shift=2,slide=4",
            "sh2-64-w1:form=rows,BLOCK_N=64,num_warps=1,shift=2"],
}


def menu_of(stem: str) -> list[str]:
    return next((m for prefix, m in MENUS.items() if stem.startswith(prefix)), ["port:"])


def configure(ir: ProgramIR, overrides: dict[str, Any]) -> tuple[ProgramIR, list[dict]]:
    """2026-11-27-pool's configure, with `shift` on the rows form only; a variant whose shift does
    not apply (pool_shift.shift_ok) fails rather than run the plain taps."""
    form = overrides.get("form")
    if overrides.get("shift") and form not in (None, "rows"):
        raise ValueError("shift is a key of the rows form")
    ir, _ = configure_27(ir, overrides)
    for kernel in (k for k in ir.kernels() if k.kind == "pool"):
        if kernel.config.get("form") != "rows":
            kernel.config.pop("shift", None)
        elif kernel.config.get("shift") and not pool_shift.is_shift(kernel):
            raise ValueError("the shift needs a fixed window, no vector taps, whole-rank window "
                             "operands and a power-of-two group of at most the strip")
    return ir, [dict(k.config) for k in ir.kernels() if k.kind == "pool"]


def probe_task(coder, path: Path, variants: list[tuple[str, dict]], args, clock) -> dict:
    """2026-11-27-pool's probe_task with this probe's configure, and the task's menu unless
    --variants names the variants."""
    if not args.variants:
        variants = [harness.parse_variant(v) for v in menu_of(path.stem)]
    previous.configure = configure  # the name its probe_task hands to probe_variant
    try:
        return previous.probe_task(coder, path, variants, args, clock)
    finally:
        previous.configure = configure_27


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__, time_limit=150.0, time_help="seconds of wall time in all, imports "
                            "included; shared out over the tasks")
    parser.add_argument("--bandwidth", type=float, default=3.0e12, help="nominal bytes/s for nominal_pct")
    parser.add_argument("--warmup", type=int, default=10, help="do_bench warm-up, ms")
    parser.add_argument("--rep", type=int, default=40, help="do_bench repetition time, ms")
    harness.add_dry_run(parser, "small sizes on the CPU interpreter")
    args = parser.parse_args(argv)
    wall = args.time_limit
    args.time_limit = max(0.0, wall - (time.monotonic() - START) - MARGIN)  # from probe_tasks' clock
    args.tasks_left = len(harness.find_tasks(args.tasks_dir, args.tasks))
    menu = [v for m in MENUS.values() for v in m]
    run_meta = harness.meta(args, nominal_bandwidth=args.bandwidth, wall_limit_s=wall,
                            do_bench={"warmup_ms": args.warmup, "rep_ms": args.rep, "return_mode": "median"})
    print_row = previous.previous.print_row
    rows = harness.probe_tasks(args, menu, probe_task, print_row, previous.summary, run_meta)
    result = previous.summary(rows)
    for task, best in result["best"].items():
        print(f"best {task}: {best['variant']} {best['floor_pct']:.1f}% floor")
    print(f"wall {time.monotonic() - START:.1f} s (limit {wall:.0f} s)")


if __name__ == "__main__":
    main()
