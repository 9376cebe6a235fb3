"""Trusted comparison: scale-aware tolerance, zeros and constants fail, NaN/Inf, structure, runs."""

import pytest
import torch

from mtmc.verify import correctness
from mtmc.verify.correctness import (
    Tolerance,
    compare_case,
    compare_outputs,
    compare_runs,
    compare_tensor,
    eager_precision,
    reference_error,
    tolerance_for,
)
from mtmc.verify.verdict import TF32_BEYOND_EAGER

FP32 = Tolerance(1e-4, 1e-4)


def test_honest_rounding_passes():
    ref = torch.randn(64, 64)
    out = ref * (1 + 1e-6 * torch.randn_like(ref))
    result = compare_tensor(ref, out, FP32, "t")
    assert result.ok and 0 < result.max_abs_error < 1e-4 and result.rel_error < 1e-5


@pytest.mark.parametrize("magnitude", [1e-6, 1e-2, 1.0, 1e4])
def test_zeros_fail_at_any_output_magnitude(magnitude):
    """KernelBench #165: a small softmax passed as zeros under an absolute tolerance (S8)."""
    ref = torch.softmax(torch.randn(8, 4096), -1) * magnitude
    result = compare_tensor(ref, torch.zeros_like(ref), FP32, "t")
    assert not result.ok and "constant" in result.message


def test_constant_mean_fails():
    ref = torch.softmax(torch.randn(8, 1000), -1)
    result = compare_tensor(ref, torch.full_like(ref, float(ref.mean())), FP32, "t")
    assert not result.ok and "constant" in result.message


def test_tolerance_scales_with_the_output():
    ref = torch.randn(1000) * 1e3
    near = ref + 0.05  # 5e-5 of max|ref| ~ 3e3: inside
    assert compare_tensor(ref, near, FP32, "t").ok
    small = torch.randn(1000) * 1e-3
    assert not compare_tensor(small, small + 1e-4, FP32, "t").ok  # 1e-4 is huge at this scale


def test_systematic_error_fails_the_normalized_check():
    ref = torch.randn(4096)
    out = ref * (1 + 3e-4)  # every element a little off, as fp16 storage would be
    result = compare_tensor(ref, out, FP32, "t")
    assert not result.ok and "normalized error" in result.message


def test_nan_and_inf():
    ref = torch.randn(100)
    out = ref.clone()
    out[7] = float("nan")
    assert "NaN value(s) where the reference has none" in compare_tensor(ref, out, FP32, "t").message
    ref_nan = ref.clone()
    ref_nan[3] = float("nan")
    out_nan = ref_nan.clone()
    assert compare_tensor(ref_nan, out_nan, FP32, "t").ok  # NaN where the reference has NaN
    ref_inf = ref.clone()
    ref_inf[0] = float("inf")
    out_inf = ref_inf.clone()
    out_inf[0] = -float("inf")
    assert "Inf" in compare_tensor(ref_inf, out_inf, FP32, "t").message
    assert compare_tensor(ref_inf, ref_inf.clone(), FP32, "t").ok


def test_shape_dtype_and_integers():
    ref = torch.randn(4, 5)
    assert "shape" in compare_tensor(ref, torch.randn(5, 4), FP32, "t").message
    assert "dtype" in compare_tensor(ref, ref.half(), FP32, "t").message
    ints = torch.arange(10)
    assert compare_tensor(ints, ints.clone(), FP32, "t").ok
    off = ints.clone()
    off[2] += 1
    assert "1 of 10 elements differ" in compare_tensor(ints, off, FP32, "t").message


def test_tolerance_per_dtype_and_task_overrides():
    assert tolerance_for(torch.float32, {}) == Tolerance(1e-4, 1e-4)
    assert tolerance_for(torch.float16, {}).atol == 1e-2
    assert tolerance_for(torch.float32, {"precision": ["tf32"]}).atol == 2e-3
    assert tolerance_for(torch.float32, {"atol": 1e-3}) == Tolerance(1e-3, 1e-4)


def test_a_reference_that_convolves_gets_the_tf32_tolerance_as_eager_cudnn_runs_it():
    assert eager_precision({}, False) == {}
    meta = eager_precision({"atol": 1e-3}, True)
    assert meta == {"atol": 1e-3, "precision": ["tf32"]}
    assert tolerance_for(torch.float32, eager_precision({}, True)) == Tolerance(2e-3, 2e-3)
    assert tolerance_for(torch.float16, eager_precision({}, True)).atol == 1e-2  # fp32 only
    assert eager_precision({"precision": ["tf32"]}, True) == {"precision": ["tf32"]}


def test_weak_reference_is_flagged_not_failed():
    ref = 1.0 + 1e-7 * torch.randn(64)  # a near-constant task (S9)
    result = compare_tensor(ref, ref.clone(), FP32, "t")
    assert result.ok and any("weak_reference" in f for f in result.flags)


def _got(outputs, **extra):
    return {"type_errors": [], "kind": "single", "outputs": outputs, "devices": ["cpu"] * len(outputs),
            "mutated_inputs": [], **extra}


def test_case_structure_types_and_mutation():
    ref = torch.randn(3, 3)
    expected = {"kind": "single", "outputs": [ref]}
    assert compare_case(expected, _got([ref.clone()]), {}, "cpu", "c").ok
    assert "returned tuple" in compare_case(expected, _got([ref], kind="tuple"), {}, "cpu", "c").message
    bad_type = _got([], type_errors=["output 0 is torch.nn.parameter.Parameter, not exactly torch.Tensor"])
    assert "not exactly torch.Tensor" in compare_case(expected, bad_type, {}, "cpu", "c").message
    on_gpu = compare_case(expected, _got([ref], devices=["cuda:0"]), {}, "cpu", "c")
    assert "output on cuda:0" in on_gpu.message
    mutated = compare_case(expected, _got([ref], mutated_inputs=[0]), {}, "cpu", "c")
    assert "modified input(s) [0]" in mutated.message


def test_runs_must_agree_unless_atomics_reorder_sums():
    ref = torch.randn(100)
    first, second = [ref.clone()], [ref + 1e-7]
    assert compare_runs(first, None, True, False, [ref], {}, "c").ok
    differ = compare_runs(first, second, False, False, [ref], {}, "c")
    assert not differ.ok and "two runs on the same inputs differ" in differ.message
    atomics = compare_runs(first, second, False, True, [ref], {}, "c")
    assert atomics.ok and any("nondeterministic" in f for f in atomics.flags)
    wrong_second = compare_runs(first, [ref + 1.0], False, True, [ref], {}, "c")
    assert not wrong_second.ok and "second run" in wrong_second.message
    fewer_second = compare_runs([ref, ref], [ref.clone()], False, True, [ref, ref], {}, "c")
    assert not fewer_second.ok and "1 output tensor(s) where the reference has 2" in fewer_second.message


def test_small_systematic_error_fails_on_the_normalized_check_alone():
    """Every element inside its elementwise bound, the whole output 1.5e-4 off: only the
    normalized error catches it (pins the `or` between the two checks)."""
    ref = torch.randn(4096)
    out = ref * (1 + 1.5e-4)
    diff = (out - ref).abs()
    assert bool((diff <= FP32.atol * ref.abs().max() + FP32.rtol * ref.abs()).all())
    result = compare_tensor(ref, out, FP32, "t")
    assert not result.ok and "normalized error" in result.message


def test_one_element_off_fails_on_the_elementwise_bound_alone():
    """One element 5 atol*max|ref| off: the normalized error stays small, the elementwise bound
    catches it (pins the size of that bound)."""
    ref = torch.randn(4096)
    out = ref.clone()
    out[100] += 5 * FP32.atol * float(ref.abs().max())
    result = compare_tensor(ref, out, FP32, "t")
    assert not result.ok and result.rel_error < FP32.atol and "1 of 4096 elements" in result.message


# ---------------------------------------------------------------------------------------------------
# eager's own error: a candidate may err up to EAGER_ERROR_MARGIN times what eager's TF32 run errs


def _tf32_like(ref: torch.Tensor, magnitude: float, seed: int = 0) -> torch.Tensor:
    """ref with a relative error of `magnitude` at random signs: its normalized error is `magnitude`."""
    signs = torch.randn(ref.shape, generator=torch.Generator().manual_seed(seed)).sign()
    return ref + magnitude * signs * ref.abs()


def test_eager_error_is_the_smallest_tolerance_eagers_output_passes():
    ref = torch.randn(2000, dtype=torch.float32)
    eager = _tf32_like(ref, 5e-3)
    eager[7] = ref[7] + 0.05 * (ref.abs().max() + ref[7].abs())  # one element far off: it decides
    t = correctness.eager_error(ref, eager, chunk=333)  # chunked as GB outputs are
    assert t == pytest.approx(0.05, rel=1e-5)
    assert compare_tensor(ref, eager, Tolerance(t * 1.001, t * 1.001), "e").ok
    assert not compare_tensor(ref, eager, Tolerance(t * 0.99, t * 0.99), "e").ok
    assert correctness.eager_error(ref, _tf32_like(ref, 5e-3), chunk=333) == pytest.approx(5e-3, rel=1e-5)
    assert correctness.eager_error(ref, ref.clone()) == 0.0  # the CPU: no TF32, eager = reference
    assert correctness.eager_error(ref, ref[:10]) == 0.0


def test_an_output_eager_errs_on_is_held_to_three_times_eagers_error_and_flagged():
    """93_ConvTranspose2d_Add_Min_GELU_Multiply's case: the conv's TF32 error, large beside an output
    that min and GELU shrank. Within 3x of eager's own error passes; 4x fails."""
    ref = torch.randn(4000, dtype=torch.float32)
    eager_t = 2e-3  # eager itself at the edge of the TF32 tolerance
    meta = eager_precision({}, True)
    twice = _tf32_like(ref, 2 * eager_t, seed=1)
    passed = compare_outputs([ref], [twice], meta, "c", [eager_t])
    assert passed.ok and correctness.EAGER_TOLERANCE_FLAG in passed.flags
    assert not compare_outputs([ref], [twice], meta, "c").ok  # the TF32 tolerance alone rejects it
    assert not compare_outputs([ref], [_tf32_like(ref, 4 * eager_t, seed=1)], meta, "c", [eager_t]).ok


def test_a_small_eager_error_never_tightens_nor_flags():
    ref = torch.randn(100, dtype=torch.float32)
    out = _tf32_like(ref, 1e-3)
    meta = eager_precision({}, True)
    result = compare_outputs([ref], [out], meta, "c", [1e-5])
    assert result.ok and correctness.EAGER_TOLERANCE_FLAG not in result.flags
    assert tolerance_for(torch.float32, meta, 1e-5) == Tolerance(2e-3, 2e-3)
    assert tolerance_for(torch.float32, meta, 1e-3) == Tolerance(3e-3, 3e-3)


def test_compare_case_and_second_runs_take_the_cases_eager_errors():
    ref = torch.randn(500, dtype=torch.float32)
    out = _tf32_like(ref, 4e-3)
    meta = eager_precision({}, True)
    expected = {"kind": "single", "outputs": [ref], "eager_errors": [2e-3]}  # allows 6e-3
    assert compare_case(expected, _got([out]), meta, "cpu", "c").ok
    assert not compare_case({**expected, "eager_errors": [0.0]}, _got([out]), meta, "cpu", "c").ok
    again = compare_runs([out], [out + 1e-9], False, True, [ref], meta, "c", [2e-3])
    assert again.ok


def test_tf32_error_where_eager_measured_fp32_is_refused_or_with_the_knob_off_flagged():
    """KernelBench level-2 57_ on an H100: eager's cuDNN erred 0 (fp32), the TF32 runs loop 3e-4.
    Refused with tf32_follows_eager (reason tf32_beyond_eager, a message that says what to do);
    accepted and flagged without it; neither where eager's error is not measured (the CPU), where
    eager's own error shows TF32, or where the candidate is fp32-accurate."""
    ref = torch.randn(2000, dtype=torch.float32)
    meta = eager_precision({}, True)
    tf32 = _tf32_like(ref, 1e-3)
    expected = {"kind": "single", "outputs": [ref], "eager_errors": [0.0], "eager_measured": True}

    def judged(expected, out, device, refuse):
        return compare_case(expected, _got([out], devices=[device]), meta, device, "c", refuse)

    def flagged(expected, out, device):
        result = judged(expected, out, device, False)
        assert result.ok
        return [f for f in result.flags if f.startswith("tf32_beyond_eager")]

    refused = judged(expected, tf32, "cuda", True)
    assert not refused.ok and refused.reason == TF32_BEYOND_EAGER == "tf32_beyond_eager"
    assert refused.message.startswith("c, output 0: erred as TF32 does (normalized error 1.0e-03")
    for words in ("eager PyTorch computed this output in fp32 on this GPU", 'input_precision="ieee"',
                  "`precision tf32x3`", "fp32 FMAs"):
        assert words in refused.message
    assert "eager PyTorch computed it in fp32" in flagged(expected, tf32, "cuda")[0]
    for where in ({**expected, "eager_measured": False}, {**expected, "eager_errors": [5e-4]}):
        assert not flagged(where, tf32, "cuda") and judged(where, tf32, "cuda", True).ok
    assert not flagged(expected, ref * (1 + 1e-7), "cuda")
    assert judged(expected, ref * (1 + 1e-7), "cuda", True).ok


def test_compare_outputs_refuses_the_first_tf32_output_beyond_eager_and_names_it():
    refs = [torch.randn(500, dtype=torch.float32), torch.randn(300, dtype=torch.float32)]
    outs = [refs[0].clone(), _tf32_like(refs[1], 1e-3)]
    meta = eager_precision({}, True)
    refused = compare_outputs(refs, outs, meta, "c", [0.0, 0.0], None, True, tf32_follows_eager=True)
    assert not refused.ok and refused.reason == TF32_BEYOND_EAGER
    assert refused.message.startswith("c, output 1:")
    flagged = compare_outputs(refs, outs, meta, "c", [0.0, 0.0], None, True, tf32_follows_eager=False)
    assert flagged.ok and not flagged.reason and any(f.startswith("tf32_beyond_eager") for f in flagged.flags)
    # an ordinary failure carries no reason
    wrong = compare_outputs(refs, [refs[0], refs[1] + 1], meta, "c", [0.0, 0.0], None, True, True)
    assert not wrong.ok and wrong.reason == ""


# ---------------------------------------------------------------------------------------------------
# the float64 floor: a candidate may err up to EAGER_ERROR_MARGIN times what the fp32 reference itself
# errs against the same forward in float64 (KernelBench level-2 #23: a GroupNorm's mean, noise around 0)


def _noise(n: int, magnitude: float, seed: int) -> torch.Tensor:
    return magnitude * torch.randn(n, generator=torch.Generator().manual_seed(seed))


def test_the_floor_is_the_float64_truths_error_against_the_reference_capped_at_its_size():
    truth = torch.randn(3000, dtype=torch.float64).exp() * 3 - 2
    floor = reference_error(truth.float(), truth, chunk=333)  # chunked as GB outputs are
    assert 0 < floor < 1e-7
    assert floor == pytest.approx(correctness.eager_error(truth.float(), truth), rel=1e-9)
    noise = _noise(3000, 1e-8, 1)  # fp32 rounding noise of a true 0
    assert reference_error(noise, _noise(3000, 1e-17, 2)) == correctness.REFERENCE_ERROR_CAP == 1.0
    # 4x the reference's own size off: eager_error says 4, the floor counts up to the reference's size
    assert correctness.eager_error(noise, -3.0 * noise.double()) == pytest.approx(4.0)
    assert reference_error(noise, -3.0 * noise.double()) == 1.0


def test_no_floor_where_it_would_not_scale_with_the_output():
    """An fp32 output underflowed to 0: compare_tensor scales its tolerance by 1 there, and a floor of
    1 would pass anything within 3 of 0. Outputs that are not float32 carry their own tolerance."""
    zeros, tiny = torch.zeros(100), torch.full((100,), 1e-50, dtype=torch.float64)
    assert correctness.eager_error(zeros, tiny) > 1 and reference_error(zeros, tiny) == 0.0
    x = torch.randn(100)
    assert reference_error(x.half(), x.double()) == 0.0
    assert reference_error(x.bfloat16(), x.double()) == 0.0
    assert reference_error(x.double(), x.double() + 1e-3) == 0.0


def test_the_floor_widens_as_eagers_error_does_the_larger_of_the_two():
    meta = eager_precision({}, True)
    assert tolerance_for(torch.float32, {}, 0.0, 1e-7) == Tolerance(1e-4, 1e-4)  # ordinary: unchanged
    assert tolerance_for(torch.float32, {}, 0.0, 1.0) == Tolerance(3.0, 3.0)
    assert tolerance_for(torch.float32, meta, 1e-3, 2e-3) == Tolerance(6e-3, 6e-3)
    assert tolerance_for(torch.float32, meta, 2e-3, 1e-3) == Tolerance(6e-3, 6e-3)


def test_a_noise_output_passes_any_noise_of_its_size_and_zeros_with_the_flag_but_not_more():
    """The reference is fp32 rounding noise around a true 0 (floor 1): a correct candidate's noise
    differs, and it was rejected; it passes now, as does the exact answer (all zeros: the constant
    check does not hold the reference's own noise up as variation). Larger garbage fails."""
    ref = _noise(64, 1e-8, 1)
    floor = reference_error(ref, _noise(64, 1e-17, 2))
    other_rounding = _noise(64, 1.5e-8, 3)
    assert not compare_outputs([ref], [other_rounding], {}, "c").ok  # without the floor
    assert "constant" in compare_outputs([ref], [torch.zeros(64)], {}, "c").message
    for out in (other_rounding, torch.zeros(64)):
        passed = compare_outputs([ref], [out], {}, "c", None, [floor])
        assert passed.ok, passed.message
        assert correctness.REFERENCE_NOISE_FLAG in passed.flags
        assert correctness.EAGER_TOLERANCE_FLAG not in passed.flags
    # 4x the reference's noise: a normalized error of about 4, past 3x the floor
    for garbage in (_noise(64, 4e-8, 3), _noise(64, 1e-6, 3), torch.randn(64), torch.full((64,), 1e-6)):
        assert not compare_outputs([ref], [garbage], {}, "c", None, [floor]).ok


def test_an_ordinary_floor_neither_loosens_nor_flags_nor_lets_a_constant_through():
    ref = torch.randn(1000)
    floor = reference_error(ref, ref.double() + 1e-8 * torch.randn(1000, dtype=torch.float64))
    assert 0 < floor < 1e-7
    honest = compare_outputs([ref], [ref * (1 + 1e-6)], {}, "c", None, [floor])
    assert honest.ok and correctness.REFERENCE_NOISE_FLAG not in honest.flags
    assert not compare_outputs([ref], [ref * (1 + 3e-4)], {}, "c", None, [floor]).ok
    constant = compare_outputs([ref], [torch.full_like(ref, float(ref.mean()))], {}, "c", None, [floor])
    assert not constant.ok and "constant" in constant.message


def test_compare_case_and_second_runs_take_the_cases_floor():
    ref, out = _noise(50, 1e-8, 1), _noise(50, 1e-8, 2)
    expected = {"kind": "single", "outputs": [ref], "eager_errors": [0.0], "reference_errors": [1.0]}
    assert compare_case(expected, _got([out]), {}, "cpu", "c").ok
    assert not compare_case({**expected, "reference_errors": [0.0]}, _got([out]), {}, "cpu", "c").ok
    assert compare_runs([out], [out * 1.01], False, True, [ref], {}, "c", [0.0], [1.0]).ok
    assert not compare_runs([out], [out * 1.01], False, True, [ref], {}, "c", [0.0]).ok


def test_a_floor_below_the_tolerance_leaves_the_constant_check_alone_on_a_degenerate_task():
    """Softmax row sums (S9's mean_softmax) are 1 and vary only by the reference's own rounding, but
    that floor (~1e-7) widens nothing: a constant 1 kernel is still rejected as constant."""
    for seed in range(5):
        x = torch.randn(8, 64, generator=torch.Generator().manual_seed(seed))
        ref = torch.softmax(x, -1).sum(-1)
        floor = reference_error(ref, torch.softmax(x.double(), -1).sum(-1))
        assert 0 < floor < 1e-6
        result = compare_outputs([ref], [torch.ones(8)], {}, "c", None, [floor])
        assert not result.ok and "constant" in result.message


def test_a_widening_floor_still_rejects_a_constant_where_the_reference_varies_beyond_it():
    """A reference noisy to 1e-3 (a tolerance of 3e-3) whose values vary by their own size: a
    constant is no closer to it than the truth is, so it is a memset (S8)."""
    ref = torch.randn(1000, generator=torch.Generator().manual_seed(0))
    result = compare_outputs([ref], [torch.full_like(ref, float(ref.mean()))], {}, "c", None, [1e-3])
    assert not result.ok and "constant" in result.message
    assert compare_outputs([ref], [ref * (1 + 2e-3)], {}, "c", None, [1e-3]).ok
