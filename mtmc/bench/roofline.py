"""% of roofline for a benchmark row: the task's floor over the GPU's peaks.

    calibrations = load_calibrations("auto")        # mtmc/bench/calibrations/*calibration.json
    floor = floor_ms(summarize(task), task, pick(calibrations, "NVIDIA H100 80GB HBM3"))

The floor is the one BENCHMARKS.md reports (benchmarks/baselines.py calls this function): max(compulsory
bytes / memory rate, matmul FLOPs / the rate of the math the task may use), the FLOPs without the work
a mask makes unnecessary (causal attention's masked triangle: mtmc/tasks/masked_work.py). Each rate is
the faster of the GPU's measured one (the calibration: a device-to-device copy, cuBLAS GEMMs) and its
datasheet one (mtmc/verify/hardware.py), so no honest program reads above 100%: a read-only stream
beats a copy's rate, and until 2026-11-27, when only the measured rates counted, honest reductions
read up to 110% and fp16 attention 113% (benchmarks/roofline_audit.py). Measured rates still count
where they are the faster (an unknown GPU, or a math the datasheet table lacks: fp32 FMA).

The math is the fastest the verifier accepts for the task (`math_rate`): its 16-bit dtype's
tensor-core rate; TF32 for fp32 tasks that allow tf32 and for fp32 convolutions (eager runs them on
TF32, cuDNN's default, so the verifier holds such a task to TF32's tolerance); otherwise the faster of
fp32 FMA and tf32x3, whose three TF32 products per product cap it at a third of the TF32 rate (the
template's tf32x3 GEMMs read 122-162% of the FMA rate in BENCHMARKS.md). A calibration without the
rate a task needs gives no floor ("unknown", n/a in the reports), never a wrong one.

`Verdict.roofline_ms` (mtmc/verify/hardware.py) is the same floor at the datasheet rates alone.
A calibration file is what `benchmarks/calibrate.py` writes: `{"gpu": <torch.cuda.get_device_name()>,
"copy_bytes_per_s": ..., "matmul_flops": {"float32": ..., "tf32": ..., "float16": ..., "bfloat16": ...}}`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mtmc.tasks import Task, TaskSummary
from mtmc.verify.hardware import Peaks, peaks_for

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
    peaks = peaks_for(calibration["gpu"])
    bandwidth = max(calibration["copy_bytes_per_s"], peaks.bandwidth_max if peaks else 0.0)
    memory_ms = 1e3 * summary.bytes_min / bandwidth
    if not summary.matmul_flops:  # no matmul or convolution: the rate plays no part
        return memory_ms, "memory"
    math, rate = math_rate(summary, task, calibration)
    if rate is None:
        return None, "unknown"
    compute_ms = 1e3 * summary.matmul_flops / max(rate, datasheet_rate(math, peaks))
    return (compute_ms, "compute") if compute_ms > memory_ms else (memory_ms, "memory")


def datasheet_rate(math: str, peaks: Peaks | None) -> float:
    """The datasheet's dense rate of `math` on the calibration's GPU (0 where unknown): a kernel that
    beats the calibration's cuBLAS run is not faster than the hardware."""
    if peaks is None:
        return 0.0
    return {"tf32": peaks.flops_fp32, "tf32x3": peaks.flops_fp32 / TF32X3_PRODUCTS,
            "float16": peaks.flops_fp16, "bfloat16": peaks.flops_fp16}.get(math, 0.0)


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
