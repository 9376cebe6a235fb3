"""benchmarks/kb_eval.py's summary of KernelBench's verdicts beside ours (issue 25 Show 6): agreement
on correctness, each harness's geomean speedup, and the speed gaps that need a reason."""

import math

import pytest

from benchmarks.kb_eval import summarize


def row(task, correct=True, kb_correct=True, ours=(2.0, 1.0), kb=(2.0, 1.0)):
    """ours / kb: (eager or reference ms, program ms)."""
    return {"task": task, "correct": correct, "kb_correct": kb_correct, "eager_ms": ours[0],
            "candidate_ms": ours[1], "kb_ref_ms": kb[0], "kb_ms": kb[1]}


def test_agreement_geomeans_and_gaps():
    rows = [row("a"), row("b", kb=(2.0, 1.5)), row("c", kb_correct=False),
            {"task": "d", "skipped": "time limit", "correct": True}]
    s = summarize(rows)
    assert s["judged"] == 3 and s["agree"] == 2 and s["disagree"] == ["c"]
    assert s["timed_by_both"] == 2
    assert s["geomean_ours_vs_eager"] == pytest.approx(2.0)
    assert s["geomean_kb_vs_eager"] == pytest.approx(round(math.sqrt(2.0 * 2.0 / 1.5), 4))
    assert s["speed_gaps_kb_over_ours"] == {"b": pytest.approx(0.667, abs=1e-3)}  # 1.33x against 2x


def test_a_gap_within_ten_percent_is_not_listed_and_no_rows_summarize_to_nothing():
    assert summarize([row("a", kb=(2.0, 1.09))])["speed_gaps_kb_over_ours"] == {}
    empty = summarize([])
    assert empty["judged"] == 0 and empty["geomean_ours_vs_eager"] is None
