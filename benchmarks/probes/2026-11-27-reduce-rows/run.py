"""Probe the template coder's row reductions on a GPU: several short rows per program (config ROWS).

    python benchmarks/probes/2026-11-27-reduce-rows/run.py --tasks-dir .kb/l2 --tasks 34_ 3_ \
        --out $OUT/rows-l2.json --time-limit 400

For each task (a file of --tasks-dir whose name starts with one of --tasks) it ports the task with
the template coder, takes every fusion, then for each variant sets the configuration of the
program's row-form reduce kernels (a variant is `name:key=value,...`; keys: ROWS, BLOCK, num_warps;
column reductions, GroupNorm, split and persistent kernels keep one row per program and are left
alone), checks the result against eager PyTorch (max abs error) and times it with
triton.testing.do_bench (median) against eager and torch.compile. A row longer than its block runs
one row per program whatever ROWS says (the launcher passes ROWS = 1 to the looped form). It prints
a table and rewrites the JSON after each task; a failing task or variant is recorded and skipped.

--cpu-dry-run checks the script's logic on the CPU (TRITON_INTERPRET=1, set here): the task's own
cpu_sizes, or --sizes, one timing repeat, no torch.compile.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

if "--cpu-dry-run" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported (the harness imports it)

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository: benchmarks/ is not installed

from benchmarks.probes import harness  # noqa: E402
from coders.template import TemplateCoder  # noqa: E402
from coders.template.emit.reduce import Layout  # noqa: E402
from coders.template.ir import Kernel, ProgramIR  # noqa: E402

# name: config overrides of the row-form reduce kernels ("port" keeps one row per program)
VARIANTS = [
    "port:",
    "rows4:ROWS=4",
    "rows16:ROWS=16",
    "rows64:ROWS=64",
    "rows16-w4:ROWS=16,num_warps=4",
    "rows16-w8:ROWS=16,num_warps=8",
]

KEYS = ("ROWS", "BLOCK", "num_warps")


def row_form(kernel: Kernel) -> bool:
    """A reduce kernel that may take several rows per program (emit/reduce_layout.py)."""
    cfg = kernel.config
    return kernel.kind == "reduce" and not Layout(kernel).column and not kernel.space.get("groups") \
        and cfg.get("split_k", 1) == 1 and not cfg.get("persistent")


def configure(ir: ProgramIR, overrides: dict[str, Any]) -> tuple[ProgramIR, list[dict]]:
    """A copy of `ir` with the overrides on every row-form reduce kernel; their configs."""
    unknown = set(overrides) - set(KEYS)
    if unknown:
        raise ValueError(f"unknown keys {sorted(unknown)}: a variant sets {', '.join(KEYS)}")
    ir = ProgramIR.from_dict(ir.to_dict())
    rows = [k for k in ir.kernels() if row_form(k)]
    if overrides and not rows:
        raise ValueError("no row-form reduce kernel to configure")
    for kernel in rows:
        kernel.config.update(overrides)
        kernel.config.pop("autotune", None)
        if "BLOCK" in overrides:
            kernel.config.pop("auto_block", None)  # as a `tile` step does: the block is the variant's
    configs = [dict(k.config, kernel=k.name, row=k.space["traced"][slice(*k.space["red"])]) for k in rows]
    return ir, configs


def probe_task(coder: TemplateCoder, path: Path, variants: list[tuple[str, dict]], args, clock) -> dict:
    return harness.configured_task(coder, path, variants, args, clock, configure)


def print_row(row: dict) -> None:
    if "error" in row:
        print(f"{row['task']}: ERROR {row['error']}", flush=True)
        return
    print(harness.speedups_head(row), flush=True)
    harness.print_variants(row, 20, harness.speedups_line)


def summary(rows: list[dict]) -> dict[str, dict]:
    """Per variant: tasks measured and the geomean speedups over each baseline."""
    return harness.geomeans(rows, harness.SPEEDUPS)


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__, time_limit=400.0, time_help="seconds; later tasks are skipped")
    harness.add_dry_run(parser, "tiny sizes on the CPU interpreter")
    args = parser.parse_args(argv)
    rows = harness.probe_tasks(args, VARIANTS, probe_task, print_row, summary,
                               harness.meta(args, eager_flags=harness.EAGER_FLAGS))
    harness.print_geomeans(summary(rows), width=20)


if __name__ == "__main__":
    main()
