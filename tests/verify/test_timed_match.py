"""The timed calls' outputs against the untimed ones where the candidate's repeats differ (timing.py,
verifier 2.7): within the tolerance the main process holds that output to, the TF32 rule applied
(judging.timed_tolerances), not 1e-2 of its largest value. A candidate makes its repeats differ at will
(one float atomic and a perturbed second call), so the loose rule let the timed calls run on TF32 or
bf16 dots after exact untimed outputs. CPU: the rule is plain tensor arithmetic."""

from __future__ import annotations

from types import SimpleNamespace

import torch
from test_tf32_follows_eager import conv_task, reference_and_result, tf32_like

from mtmc.program import Program
from mtmc.verify.engine import Engine, Settings
from mtmc.verify.judging import timed_tolerances
from mtmc.verify.timing import LOOSE_MATCH, Timing, _check_output, close

FP32, TF32 = (1e-4, 1e-4), (2e-3, 2e-3)
EXACT = (1e-5, 1e-5)  # correctness.TF32_EVIDENCE: fp32 where eager computed fp32 (verifier 2.10)


def mismatches(outputs: list[torch.Tensor], own: list[torch.Tensor], rule) -> int:
    timing = Timing()
    _check_output(timing, outputs, [own], {}, 0, rule)
    return timing.mismatches


def test_a_tf32_or_bf16_timed_call_after_an_exact_untimed_one_mismatches_at_the_held_tolerance():
    own = torch.randn(1 << 16, generator=torch.Generator().manual_seed(0))
    bf16 = own.bfloat16().float()
    for cheap in (tf32_like(own), bf16):
        assert mismatches([cheap], [own], [FP32]) == 1
        assert mismatches([cheap], [own], None) == 0  # what the 1e-2 rule let through
    assert mismatches([tf32_like(own)], [own], [TF32]) == 0  # where TF32 is the held tolerance
    atomics = own * (1 + 1e-7 * torch.randn(own.shape, generator=torch.Generator().manual_seed(2)))
    assert mismatches([atomics], [own], [FP32]) == 0  # another order of float additions
    assert mismatches([atomics], [own], True) == 1  # bitwise, for a candidate whose repeats were equal


def test_the_held_match_compares_as_the_reference_check_does():
    own = torch.tensor([1.0, float("nan"), float("inf"), -2.0])
    assert close(own.clone(), own, *FP32)  # NaN and infinities in the same places
    assert not close(torch.tensor([1.0, 0.0, float("inf"), -2.0]), own, *FP32)
    spread = torch.linspace(-1, 1, 1000)
    small_everywhere = spread + 5e-5 * spread.abs().max()  # each element within atol * max|own|
    assert close(small_everywhere, spread, *FP32)
    assert not close(small_everywhere, spread, 2e-5, 2e-5)
    peaked = torch.randn(1 << 14, generator=torch.Generator().manual_seed(3))
    biased = peaked + 0.9e-4 * peaked.abs().max()  # every element within its bound, but all of them
    assert not close(biased, peaked, *FP32)  # the normalized error (~4e-4) is TF32's, not fp32's
    one_far = spread.clone()
    one_far[777] += 1e-3
    for chunk in (7, 1 << 26):  # in pieces, as a GB output is: the same answers
        assert close(small_everywhere, spread, *FP32, chunk=chunk)
        assert not close(one_far, spread, *FP32, chunk=chunk)
        assert not close(tf32_like(spread), spread, *FP32, chunk=chunk)
    half = torch.randn(4096).half()
    assert close(half.clone(), half, 1e-2, 1e-2) and not close(torch.zeros_like(half), half, 1e-2, 1e-2)
    assert LOOSE_MATCH == 1e-2


def test_the_tolerances_sent_with_the_candidate_follow_eager_as_its_checks_do():
    ref = torch.randn(4000)
    reference, _ = reference_and_result(ref.clone(), ref)
    reference.timing_sets = [0]
    assert timed_tolerances(conv_task(), reference) == [[EXACT]]  # eager computed it in fp32
    assert timed_tolerances(conv_task(), reference, False) == [[TF32]]  # the knob off: the allowance
    assert timed_tolerances(conv_task('MTMC = {"precision": ["tf32"]}'), reference) == [[TF32]]
    reference.expected[0]["eager_errors"] = [6e-4]  # eager on TF32: the allowance, widened to 3x it
    assert timed_tolerances(conv_task(), reference) == [[(2e-3, 2e-3)]]
    reference.expected[0].update(eager_errors=[0.0], reference_errors=[1e-3])  # the float64 floor
    assert timed_tolerances(conv_task(), reference) == [[(3e-3, 3e-3)]]
    reference.timing_sets = None  # the CPU: nothing is timed
    assert timed_tolerances(conv_task(), reference) == []


def test_the_engine_sends_them_with_its_knob():
    ref = torch.randn(8)
    reference, _ = reference_and_result(ref.clone(), ref)
    reference.timing_sets = [0]
    for follows, held in ((True, EXACT), (False, TF32)):
        engine = SimpleNamespace(settings=Settings(tf32_follows_eager=follows), device_type="cuda")
        args = Engine._candidate_args(engine, conv_task(), Program("src"), reference)
        assert args["timed_tolerances"] == [[held]]
