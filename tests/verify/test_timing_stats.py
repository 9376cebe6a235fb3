"""The statistic verdicts report (timing.py): the 10th percentile of the kept calls (CPU, no GPU)."""

import pytest

from mtmc.verify.timing import REPORTED_QUANTILE, Timing, _summarize, quantile


def test_quantile_interpolates_between_ranks():
    assert quantile([3.0, 1.0, 2.0], 0.0) == 1.0
    assert quantile([3.0, 1.0, 2.0], 0.5) == 2.0
    assert quantile([3.0, 1.0, 2.0], 1.0) == 3.0
    assert quantile([0.0, 10.0], 0.1) == pytest.approx(1.0)
    assert quantile([7.0], 0.1) == 7.0


def test_a_burst_of_slow_calls_moves_the_median_but_not_the_reported_time():
    # as on the H100: an 8.4 us kernel, and stretches of calls at 40 us in some children
    quiet, bursty = Timing(), Timing()
    _summarize(quiet, [0.0084] * 40)
    _summarize(bursty, [0.0084] * 18 + [0.040] * 22)
    assert bursty.median_ms / quiet.median_ms > 4
    assert bursty.reported_ms == pytest.approx(quiet.reported_ms)
    assert REPORTED_QUANTILE == 0.1
