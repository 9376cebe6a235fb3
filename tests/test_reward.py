"""The step reward: the failure order, log-speedup over the previous accepted program, decay, clipping.

    pytest tests/test_reward.py
"""

import doctest
import math

import pytest

import mtmc.reward
from mtmc.reward import RewardConfig, speedup_over, step_reward
from mtmc.verify.verdict import Status, Verdict

CFG = RewardConfig()


def test_doctests():
    assert doctest.testmod(mtmc.reward).failed == 0


def test_failures_are_ordered_hack_worst_then_crashes_then_wrong_answers():
    reward = {status: step_reward(Verdict(status), None, CFG) for status in Status}
    broken = [reward[s] for s in (Status.COMPILE_ERROR, Status.CRASH, Status.TIMEOUT, Status.RUNTIME_ERROR)]
    assert reward[Status.REJECTED] < min(broken)
    assert max(broken) < reward[Status.INCORRECT]
    assert reward[Status.INCORRECT] < 0 < reward[Status.OK]


def test_correct_without_timings_earns_only_the_correctness_reward():
    previous = Verdict(Status.OK)  # CPU interpreter: nothing timed on either side
    assert step_reward(Verdict(Status.OK), previous, CFG) == CFG.correct


def test_speedup_is_measured_against_the_previous_accepted_program():
    previous = Verdict(Status.OK, candidate_ms=3.0, eager_ms=6.0)
    faster = Verdict(Status.OK, candidate_ms=1.5, eager_ms=6.0)
    slower = Verdict(Status.OK, candidate_ms=6.0, eager_ms=6.0)
    assert step_reward(faster, previous, CFG) == pytest.approx(CFG.correct + math.log(2.0))
    assert step_reward(slower, previous, CFG) == pytest.approx(CFG.correct + math.log(0.5))


def test_before_the_port_the_previous_program_is_eager():
    port = Verdict(Status.OK, candidate_ms=1.0, eager_ms=4.0)
    assert speedup_over(port, None) == pytest.approx(4.0)
    assert step_reward(port, None, CFG) == pytest.approx(CFG.correct + math.log(4.0))


def test_log_speedup_is_clipped():
    absurd = Verdict(Status.OK, candidate_ms=1e-6, eager_ms=1.0)
    assert step_reward(absurd, None, CFG) == pytest.approx(CFG.correct + CFG.max_log_speedup)


def test_step_decay_lowers_later_steps():
    cfg = RewardConfig(step_decay=0.05)
    assert step_reward(Verdict(Status.OK), None, cfg, step=4) == pytest.approx(cfg.correct - 0.2)
    assert step_reward(Verdict(Status.INCORRECT), None, cfg, step=2) == pytest.approx(cfg.incorrect - 0.1)


def test_config_is_frozen():
    with pytest.raises(AttributeError):
        CFG.correct = 1.0
