"""The roofline floor: the measured calibrations ship as package data (tests/test_packaging.py),
each task is held to the rate of the math it may use, and the report warns of a share above 100%."""

from __future__ import annotations

import pytest

from mtmc.bench.metrics import ROW_FIELDS, aggregate
from mtmc.bench.results import results_markdown
from mtmc.bench.roofline import CALIBRATION_DIR, floor_ms, load_calibrations, pick
from mtmc.tasks import Task, summarize


def test_auto_loads_every_shipped_calibration_newest_first():
    calibrations = load_calibrations("auto")
    assert len(calibrations) == len(list(CALIBRATION_DIR.glob("*calibration.json"))) >= 2
    assert pick(calibrations, "NVIDIA H100 80GB HBM3") is not None
    assert pick(calibrations, "NVIDIA H200") is not None
    assert pick(calibrations, "a GPU nobody measured") is None


# --- the rate a task's math may use, on synthetic calibrations (CPU: summaries trace on meta tensors) ----
# memory this fast leaves the floor of these small matmuls and convolutions to their math
CALIBRATION = {"gpu": "a test GPU", "copy_bytes_per_s": 1e14,
               "matmul_flops": {"float32": 50e12, "tf32": 400e12, "float16": 800e12, "bfloat16": 800e12}}
SOURCE = '''
import torch
MTMC = {meta}

class Model(torch.nn.Module):
    def forward(self, a, b):
        return {expr}

def get_inputs():
    return [torch.randn({a}, dtype=torch.{dtype}), torch.randn({b}, dtype=torch.{dtype})]

def get_init_inputs():
    return []
'''
MATMUL = {"expr": "a @ b", "a": "512, 512", "b": "512, 512"}
CONV = {"expr": "torch.nn.functional.conv2d(a, b)", "a": "8, 64, 32, 32", "b": "64, 64, 3, 3"}
RELU = {"expr": "torch.relu(a) + b", "a": "512, 512", "b": "512, 512"}


def floor_with(op: dict, calibration=CALIBRATION, dtype="float32", meta=None):
    """(floor ms, bound, the floor at `rate` FLOP/s) of a one-op task."""
    task = Task("t", SOURCE.format(meta=meta or {}, dtype=dtype, **op))
    summary = summarize(task)
    floor, bound = floor_ms(summary, task, calibration)
    return floor, bound, lambda rate: 1e3 * summary.matmul_flops / rate


def without(*rates: str) -> dict:
    return CALIBRATION | {"matmul_flops": {k: v for k, v in CALIBRATION["matmul_flops"].items()
                                           if k not in rates}}


def test_fp32_convolutions_and_tasks_that_allow_tf32_are_held_to_the_tf32_rate():
    floor, bound, at = floor_with(CONV)  # eager's cuDNN runs it on TF32
    assert bound == "compute" and floor == pytest.approx(at(400e12))
    floor, _, at = floor_with(MATMUL, meta={"precision": ["tf32"]})
    assert floor == pytest.approx(at(400e12))


def test_strict_fp32_matmuls_are_held_to_the_faster_of_fma_and_tf32x3():
    floor, bound, at = floor_with(MATMUL)
    assert bound == "compute" and floor == pytest.approx(at(400e12 / 3))  # tf32x3: 133 > 50 TFLOP/s
    slow_tensor_cores = CALIBRATION | {"matmul_flops": {"float32": 50e12, "tf32": 90e12}}
    floor, _, at = floor_with(MATMUL, slow_tensor_cores)
    assert floor == pytest.approx(at(50e12))  # 30 < 50: the FMA rate is the faster fp32 math


def test_16_bit_tasks_are_held_to_their_own_rate():
    for dtype in ("float16", "bfloat16"):
        floor, _, at = floor_with(MATMUL, dtype=dtype)
        assert floor == pytest.approx(at(800e12))


def test_a_rate_the_calibration_did_not_measure_gives_no_floor_not_the_fp32_one():
    assert floor_with(CONV, without("tf32"))[:2] == (None, "unknown")
    assert floor_with(MATMUL, without("tf32"))[:2] == (None, "unknown")
    assert floor_with(MATMUL, without("float16"), dtype="float16")[:2] == (None, "unknown")
    floor, bound, _ = floor_with(RELU, without("tf32"))  # no matmul: the rate plays no part
    assert bound == "memory" and floor == pytest.approx(1e3 * 3 * 512 * 512 * 4 / 1e14)


# --- what the report says about the roofline ---------------------------------------------------------------
def timed_row(name: str, **values) -> dict:
    return dict.fromkeys(ROW_FIELDS) | {"task": name, "status": "ok", "correct": True, "candidate_ms": 1.0,
                                        "device": "a test GPU", "flags": ""} | values


def test_the_report_warns_of_every_task_above_its_roofline_and_says_why_a_share_is_unknown():
    rows = [timed_row("fast_gemm", floor_ms=1.35, bound="compute", roofline_pct=135.0,
                      eager_roofline_pct=40.0, compiled_roofline_pct=101.5),
            timed_row("honest_copy", floor_ms=0.9, bound="memory", roofline_pct=90.0,
                      eager_roofline_pct=100.0, compiled_roofline_pct=None),
            timed_row("conv_old_gpu", bound="unknown")]
    report = results_markdown(rows, aggregate(rows), {"suite": "s", "planner": "p", "coder": "c",
                                                      "verifier": "v"})
    warnings = [line for line in report.splitlines() if line.startswith("- warning:")]
    assert len(warnings) == 1 and "fast_gemm" in warnings[0]
    assert "kernel 135.0%, torch.compile 101.5%" in warnings[0] and "eager" not in warnings[0]
    assert "% of roofline is n/a for conv_old_gpu: " in report and "no measured calibration" not in report
