"""% of roofline for a benchmark row: the task's floor over the GPU's *measured* peaks.

    calibrations = load_calibrations("auto")        # mtmc/bench/calibrations/*calibration.json
    floor = floor_ms(summarize(task), task, pick(calibrations, "NVIDIA H100 80GB HBM3"))

The floor is the one BENCHMARKS.md reports (benchmarks/baselines.py calls this function): max(compulsory
bytes / measured copy bandwidth, matmul FLOPs / the measured rate of the math the task may use), so a
benchmark's "% of roofline" column reads against the same ceilings as the eager and torch.compile
columns there. Measured, not datasheet: 100% means "as fast as the calibration kernels ran on this
GPU".

The rate is the fastest math the verifier accepts for the task (`math_rate`): its 16-bit dtype's
tensor-core rate; TF32 for fp32 tasks that allow tf32 and for fp32 convolutions (eager runs them on
TF32, cuDNN's default, so the verifier holds such a task to TF32's tolerance); otherwise the faster of
fp32 FMA and tf32x3, whose three TF32 products per product cap it at a third of the TF32 rate (the
template's tf32x3 GEMMs read 122-162% of the FMA rate in BENCHMARKS.md). A calibration without the
rate a task needs gives no floor ("unknown", n/a in the reports), never a wrong one.

It differs from the verifier's floors (mtmc/verify/hardware.py): `Verdict.roofline_ms`, from its
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

FLOAT_DTYPES = ("float16", "bfloat16", "float32", "float64")  # the first such input sets the task's math
TF32X3_PRODUCTS = 3  # tf32x3 splits each operand in a high and a low TF32 part: hi*hi + hi*lo + lo*hi


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


def floor_ms(summary: TaskSummary, task: Task, calibration: Calibration) -> tuple[float | None, str]:
    """(floor in ms, which limit sets it: "memory", "compute", or "unknown" with a None floor where the
    calibration lacks the rate of the math the task may use)."""
    memory_ms = 1e3 * summary.bytes_min / calibration["copy_bytes_per_s"]
    if not summary.matmul_flops:  # no matmul or convolution: the rate plays no part
        return memory_ms, "memory"
    _, rate = math_rate(summary, task, calibration)
    if rate is None:
        return None, "unknown"
    compute_ms = 1e3 * summary.matmul_flops / rate
    return (compute_ms, "compute") if compute_ms > memory_ms else (memory_ms, "memory")


def math_rate(summary: TaskSummary, task: Task, calibration: Calibration) -> tuple[str, float | None]:
    """(name, FLOP/s) of the fastest math the verifier accepts for the task's matmuls and convolutions
    (see the module docstring); the rate is None where the calibration did not measure it."""
    rates = calibration["matmul_flops"]
    dtype = next((t.dtype for t in summary.inputs if t.dtype in FLOAT_DTYPES), "float32")
    if dtype != "float32":
        return dtype, rates.get(dtype)
    # "convolution" is aten's one op for every convolution, as the verifier sees it (verify/child.py)
    if "tf32" in task.precisions or "convolution" in summary.ops:
        return "tf32", rates.get("tf32")
    if rates.get("tf32") is None or rates.get("float32") is None:
        return "float32", None  # without both, the faster fp32-accurate math is not known
    tf32x3 = rates["tf32"] / TF32X3_PRODUCTS
    return ("tf32x3", tf32x3) if tf32x3 > rates["float32"] else ("float32", rates["float32"])
