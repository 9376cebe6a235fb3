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

import os
import re
import sys
from pathlib import Path
from typing import Any

if "--cpu-dry-run" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository: benchmarks/ is not installed

from benchmarks.probes import harness  # noqa: E402
from coders.template import TemplateCoder  # noqa: E402
from coders.template.ir import ProgramIR  # noqa: E402
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


def dry_sizes(task: Task) -> dict[str, Any]:
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
    path, name, sizes, device, bench = ctx
    result: dict[str, Any] = {}
    ir, result["configs"] = configure(base, overrides)
    source, module = harness.load(task, ir, path, name)
    for key, value in sizes.items():  # as the verifier does: the program's own copies of the sizes
        if hasattr(module, key):
            setattr(module, key, value)
    candidate = harness.instantiate(module, task, sizes, reference, device)
    with torch.no_grad():
        result["recurrent_launches"] = recurrent_launches(module, source, lambda: candidate(*inputs))
    result.update(harness.measure(candidate, inputs, expected, bench))
    harness.speedups(result, row)
    return result


def probe_task(coder: TemplateCoder, path: Path, variants: list[tuple[str, dict]], args, clock) -> dict:
    task = task_from_file(path)
    cpu = args.cpu_dry_run
    device = "cpu" if cpu else "cuda"
    sizes = harness.sizes_of(task, args, dry=dry_sizes)
    bench = harness.timer(cpu)
    row: dict[str, Any] = {"task": path.stem, "sizes": sizes}
    reference = task.make_model(seed=0, sizes=sizes).to(device)
    inputs = harness.on(device, task.make_inputs(seed=1, sizes=sizes))
    expected = harness.eager_baselines(row, reference, inputs, args, bench)
    base = ProgramIR.from_dict(coder.apply(task, None, PORT).metadata["template_ir"])

    def run(name: str, overrides: dict) -> dict:
        ctx = (path, name, sizes, device, bench)
        try:
            return run_variant(task, base, overrides, reference, inputs, expected, row, ctx)
        except Exception as err:  # a compile or launch failure is a result to report, not a crash
            return harness.failure(err)

    harness.probe_variants(row, variants, args, clock, run)
    return row


def print_row(row: dict) -> None:
    if "error" in row or "skipped" in row:
        print(f"{row['task']}: {row.get('error') or row.get('skipped')}", flush=True)
        return
    print(harness.speedups_head(row), flush=True)
    harness.print_variants(row, 24, lambda r: f"{harness.speedups_line(r)}  "
                                              f"launches {r['recurrent_launches']}")


def summary(rows: list[dict]) -> dict[str, dict]:
    """Per variant: tasks measured and the geomean speedups over each baseline."""
    return harness.geomeans(rows, harness.SPEEDUPS)


def main(argv: list[str] | None = None) -> None:
    tasks_help = "task file names or their prefixes (default: level 3's LSTMs and GRUs)"
    parser = harness.parser(__doc__, time_limit=500.0, time_help="seconds; later variants are skipped",
                            tasks_default=RNN_TASKS, tasks_help=tasks_help)
    harness.add_dry_run(parser, "small sizes on the CPU interpreter")
    args = parser.parse_args(argv)
    rows = harness.probe_tasks(args, VARIANTS, probe_task, print_row, summary,
                               harness.meta(args, eager_flags=harness.EAGER_FLAGS), write_skipped=True)
    harness.print_geomeans(summary(rows), width=24)


if __name__ == "__main__":
    main()
