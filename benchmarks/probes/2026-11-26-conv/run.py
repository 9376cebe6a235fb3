"""Probe the template coder's forward convolutions on a GPU: K-loop order x precision x tile.

    python benchmarks/probes/2026-11-26-conv/run.py --tasks-dir .kb/l1 \
        --tasks 50_conv 63_conv --out $OUT/conv.json --time-limit 400

For each task (a file of --tasks-dir whose name starts with one of --tasks) it ports the task with
the template coder, fuses every epilogue, then for each variant overrides the configuration of
the program's implicit-GEMM conv kernels (a variant is `name:key=value,...`; keys are config keys:
k_loop, precision, BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages, epilogue_t (either conv's, the
direct form's too), the runs loop's runs_static, the FMA loop's fma_static, the epilogue's split_rows,
a transposed conv's phases, live_taps, grouped_programs and transpose_static (0 is off, 1 on);
--transpose-menu: TRANSPOSE_VARIANTS), checks the result against eager PyTorch with TF32 off (max abs
error; the same for eager with cuDNN TF32 on, for scale) and times it with triton.testing.do_bench
(median) against eager with cuDNN TF32 on (PyTorch's default) and off, and torch.compile (default
flags). It prints a table and rewrites the JSON after each task. One failing task or variant is
recorded and skipped; once --time-limit seconds have passed the remaining tasks are recorded as skipped.

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
from coders.template import TemplateCoder, steps  # noqa: E402
from coders.template.ir import ProgramIR  # noqa: E402

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

# --transpose-menu: the transposed convs' K loop (live_taps=0: the loop before the live-tap loop, every
# tap behind an `if`) and tiles for the live-tap loop, which pipelines (num_stages counts). A config
# value of digits is an int (harness.parse_variant): 0 turns a boolean key off.
TRANSPOSE_VARIANTS = [
    "port:",
    "if-taps:live_taps=0",
    "live-64x64x32-s3:BLOCK_M=64,BLOCK_N=64,BLOCK_K=32,num_warps=4,num_stages=3",
    "live-64x64x32-s4:BLOCK_M=64,BLOCK_N=64,BLOCK_K=32,num_warps=4,num_stages=4",
    "live-128x64x32-s3:BLOCK_M=128,BLOCK_N=64,BLOCK_K=32,num_warps=4,num_stages=3",
    "live-128x64x32-w8-s3:BLOCK_M=128,BLOCK_N=64,BLOCK_K=32,num_warps=8,num_stages=3",
    "live-128x128x32-s3:BLOCK_M=128,BLOCK_N=128,BLOCK_K=32,num_warps=8,num_stages=3",
    "live-64x128x32-s3:BLOCK_M=64,BLOCK_N=128,BLOCK_K=32,num_warps=4,num_stages=3",
    "live-256x64x32-s3:BLOCK_M=256,BLOCK_N=64,BLOCK_K=32,num_warps=8,num_stages=3",
    "live-128x64x16-s4:BLOCK_M=128,BLOCK_N=64,BLOCK_K=16,num_warps=4,num_stages=4",
]

DIRECT_KEYS = ("BLOCK_M", "BLOCK_N", "num_warps", "num_stages", "epilogue_t")
CONV_KINDS = ("conv", "conv_transpose")  # a transposed conv takes the same keys but k_loop


def configure(ir: ProgramIR, overrides: dict[str, Any]) -> tuple[ProgramIR, list[dict]]:
    """A copy of `ir` with the overrides on every conv and transposed-conv kernel (on a direct-form
    kernel, only those it has: tiles, warps, stages, epilogue_t); their configs."""
    ir = ProgramIR.from_dict(ir.to_dict())
    convs = [k for k in ir.kernels() if k.kind in CONV_KINDS]
    for kernel in convs:
        direct = kernel.space.get("form") == "direct"
        kernel.config.update({k: v for k, v in overrides.items() if not direct or k in DIRECT_KEYS})
        kernel.config.pop("autotune", None)
        fits = steps.smem_bytes(ir, kernel) <= steps.SMEM_BYTES
        if not fits:
            raise ValueError(f"tiles need {steps.smem_bytes(ir, kernel)} B of shared memory")
    configs = [dict(k.config, form=k.space.get("form", "transpose")) for k in convs]
    return ir, configs



def probe_task(coder: TemplateCoder, path: Path, variants: list[tuple[str, dict]], args, clock) -> dict:
    return harness.configured_task(coder, path, variants, args, clock, configure)


def print_row(row: dict) -> None:
    if "error" in row:
        print(f"{row['task']}: ERROR {row['error']}", flush=True)
        return
    print(harness.speedups_head(row), flush=True)
    harness.print_variants(row, 28, harness.speedups_line)


def summary(rows: list[dict]) -> dict[str, dict]:
    """Per variant: tasks measured and the geomean speedups over each baseline."""
    return harness.geomeans(rows, harness.SPEEDUPS)


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__, time_limit=400.0, time_help="seconds; later tasks are skipped")
    parser.add_argument("--transpose-menu", action="store_true", help="TRANSPOSE_VARIANTS as the menu")
    harness.add_dry_run(parser, "tiny sizes on the CPU interpreter")
    args = parser.parse_args(argv)
    menu = TRANSPOSE_VARIANTS if args.transpose_menu else VARIANTS
    rows = harness.probe_tasks(args, menu, probe_task, print_row, summary,
                               harness.meta(args, eager_flags=harness.EAGER_FLAGS))
    harness.print_geomeans(summary(rows), width=28)


if __name__ == "__main__":
    main()
