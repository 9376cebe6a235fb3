"""% of roofline for a benchmark row: the task's floor over the GPU's *measured* peaks.

    calibrations = load_calibrations("auto")        # mtmc/bench/calibrations/*calibration.json
    floor = floor_ms(summarize(task), task, pick(calibrations, "NVIDIA H100 80GB HBM3"))

The floor is the one BENCHMARKS.md reports (benchmarks/baselines.py calls this function): max(compulsory
bytes / measured copy bandwidth, matmul FLOPs / the measured matmul rate of the task's dtype), so a
benchmark's "% of roofline" column reads against the same ceilings as the eager and torch.compile
columns there. Measured, not datasheet: 100% means "as fast as the calibration kernels ran on this
GPU". It differs from the verifier's floors (mtmc/verify/hardware.py): `Verdict.roofline_ms`, from its
table of copy bandwidths and datasheet FLOP peaks, and the lower rejection floor at the datasheet's
memory and math rates, which must never reject an honest kernel.
A calibration file is what `benchmarks/calibrate.py` writes: `{"gpu": <torch.cuda.get_device_name()>,
"copy_bytes_per_s": ..., "matmul_flops": {"float32": ..., "tf32": ..., "float16": ..., "bfloat16": ...}}`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mtmc.tasks import Task, TaskSummary

# package data, so an installed wheel finds them; `benchmarks/calibrate.py` writes a new one
CALIBRATION_DIR = Path(__file__).resolve().parent / "calibrations"

Calibration = dict[str, Any]


def load_calibrations(spec: str | None) -> list[Calibration]:
    """`auto`: every calibration shipped in mtmc/bench/calibrations, newest first; a path: that file;
    None: none."""
    if spec is None:
        return []
    if spec == "auto":
        # Files are named <date>-<gpu>-calibration.json, so reverse name order is newest first.
        files = sorted(CALIBRATION_DIR.glob("*calibration.json"), reverse=True)
        return [json.loads(p.read_text()) for p in files]
    path = Path(spec)
    if not path.is_file():
        raise FileNotFoundError(f"calibration={spec}: no such file")
    return [json.loads(path.read_text())]


def pick(calibrations: list[Calibration], device: str | None) -> Calibration | None:
    """The first calibration measured on exactly this GPU model; None when there is none."""
    return next((c for c in calibrations if device and c["gpu"] == device), None)


def floor_ms(summary: TaskSummary, task: Task, calibration: Calibration) -> tuple[float, str]:
    """(floor in ms, which limit sets it: "memory" or "compute")."""
    rates = calibration["matmul_flops"]
    dtype = summary.inputs[0].dtype if summary.inputs else "float32"
    # A task that allows TF32 is judged against the TF32 rate: that is the fastest honest fp32 math.
    if dtype == "float32" and "tf32" in task.precisions:
        dtype = "tf32"
    compute_ms = 1e3 * summary.matmul_flops / rates.get(dtype, rates["float32"])
    memory_ms = 1e3 * summary.bytes_min / calibration["copy_bytes_per_s"]
    return (compute_ms, "compute") if compute_ms > memory_ms else (memory_ms, "memory")
