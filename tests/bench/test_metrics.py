"""fast_p, geomean and the roofline floor on hand-made rows (the definitions, edge cases included).

Run: python -m pytest tests/bench/test_metrics.py -v
"""

import math

import pytest

from mtmc.bench.metrics import aggregate, blank_row, fast_p, geomean, is_timed, port_ms
from mtmc.bench.roofline import floor_ms, load_calibrations, pick
from mtmc.tasks import load_task, summarize
from mtmc.verify.verifier import INTERPRETER_DEVICE
from tests.bench.fakes import tiny_tasks

H100 = "NVIDIA H100 80GB HBM3"


def row(name, correct, eager=None, compiled=None, device="gpu", status="ok"):
    return blank_row(tiny_tasks(name)[0]) | {"correct": correct, "speedup_eager": eager,
                                             "speedup_compiled": compiled, "device": device, "status": status}


def test_fast_p_counts_correct_and_strictly_faster_over_all_tasks():
    rows = [row("a", True, 2.0), row("b", True, 1.5), row("c", False, 9.0), row("d", True, None),
            row("e", False, status="error", device=None)]
    assert fast_p(rows, 1.0, "eager") == 2 / 5  # c is fast but wrong; d has no time; e errored
    assert fast_p(rows, 1.5, "eager") == 1 / 5  # 1.5 is not > 1.5
    assert fast_p(rows, 2.0, "eager") == 0.0
    agg = aggregate(rows, ps=(1.0, 1.5))
    assert agg["fast_p"]["eager"] == {"1.0": 0.4, "1.5": 0.2}
    assert (agg["tasks"], agg["correct"], agg["errors"]) == (5, 3, 1)
    assert agg["geomean_speedup_eager"] == pytest.approx(math.sqrt(3.0))  # correct and timed: a, b


def test_untimed_runs_report_none_but_a_failed_gpu_run_reports_zero():
    cpu = [row("a", True, device=INTERPRETER_DEVICE), row("b", False, device=INTERPRETER_DEVICE)]
    assert not is_timed(cpu)
    agg = aggregate(cpu)
    assert agg["correct_rate"] == 0.5
    assert set(agg["fast_p"]["eager"].values()) == {None} and agg["geomean_speedup_eager"] is None
    gpu_all_failed = [row("a", False, device=H100), row("b", False, device=H100)]
    assert set(aggregate(gpu_all_failed)["fast_p"]["compiled"].values()) == {0.0}


def test_port_ms_is_the_first_accepted_program_and_its_geomean_is_over_correct_tasks():
    def attempt(outcome, ms):
        return {"outcome": outcome, "verdict": {"candidate_ms": ms}}

    # a failed port attempt, the retried port, then a faster accepted step
    assert port_ms([attempt("retry", None), attempt("accepted", 2.0), attempt("accepted", 1.0)]) == 2.0
    assert port_ms([attempt("rejected", 3.0)]) is None
    rows = [row("a", True) | {"eager_ms": 4.0, "compiled_ms": 2.0, "port_ms": 2.0},
            row("b", True) | {"eager_ms": 2.0, "compiled_ms": 1.0, "port_ms": 4.0},
            row("c", False) | {"eager_ms": 9.0, "compiled_ms": 9.0, "port_ms": 1.0}]
    agg = aggregate(rows)
    assert agg["geomean_port_speedup_eager"] == pytest.approx(1.0)  # 2x and 0.5x; c is not correct
    assert agg["geomean_port_speedup_compiled"] == pytest.approx(math.sqrt(0.25))


def test_geomean_ignores_missing_values():
    assert geomean([4.0, None, 1.0]) == pytest.approx(2.0)
    assert geomean([None]) is None


def test_the_floor_takes_the_faster_of_the_measured_and_the_datasheet_rates():
    """The H100 calibration measured a 3.02 TB/s copy and 723 TFLOP/s fp16 cuBLAS; the datasheet's
    3.35 TB/s and 990 TFLOP/s are faster, so they set the floors (BENCHMARKS.md's tables before
    2026-11-27 read 1.423 and 1.521 ms at the measured rates, and honest kernels beat them)."""
    calibration = pick(load_calibrations("auto"), H100)
    assert calibration is not None and pick(load_calibrations("auto"), "some other GPU") is None
    task = load_task("softmax_lastdim")  # 4 GiB read and written
    floor, bound = floor_ms(summarize(task), task, calibration)
    assert bound == "memory" and floor == pytest.approx(1e3 * 2**32 / 3.35e12)
    task = load_task("matmul_fp16")  # 8192^2 x 8192 x 2 FLOPs
    floor, bound = floor_ms(summarize(task), task, calibration)
    assert bound == "compute" and floor == pytest.approx(1e3 * 2 * 8192**3 / 990e12)
    unknown_gpu = calibration | {"gpu": "some other GPU"}  # no datasheet: the measured rates
    assert floor_ms(summarize(task), task, unknown_gpu)[0] == pytest.approx(1.521, abs=1e-3)


def test_a_missing_calibration_file_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        load_calibrations(str(tmp_path / "nope.json"))
    assert load_calibrations(None) == []


def test_throughput_spans_the_first_start_to_the_last_finish_and_counts_verified_candidates():
    rows = [row("a", True) | {"started": 100.0, "finished": 160.0, "verified": 3},
            row("b", True) | {"started": 110.0, "finished": 130.0, "verified": 2},  # beside a, on another GPU
            row("c", False, status="error")]  # never timed: no span, no verdicts
    agg = aggregate(rows)
    assert agg["elapsed_s"] == 60.0 and agg["verified_per_min"] == 5.0 and agg["verified"] == 5
    assert agg["wall_s"] == sum(r["wall_s"] or 0 for r in rows)  # the tasks' own times, unchanged


def test_results_written_before_the_throughput_columns_report_none():
    agg = aggregate([row("a", True)])
    assert agg["elapsed_s"] is None and agg["verified_per_min"] is None and agg["verified"] is None
