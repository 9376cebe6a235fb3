"""mtmc/verify/tensor_compare.py: the chunked comparison gives the verdict of one pass over the whole
tensor (the chunk size 7 puts every check across chunk boundaries), in a float type that holds
the values exactly."""

from __future__ import annotations

import pytest
import torch

from mtmc.verify.tensor_compare import _finite_chunks, compare_values

WHOLE = 1 << 30


def both(ref, out, atol=1e-4, rtol=1e-4, floor=0.0):
    """The verdict in chunks of 7 elements and in one chunk; they must agree."""
    chunked = compare_values(ref, out, atol, rtol, floor, "t", chunk=7)
    whole = compare_values(ref, out, atol, rtol, floor, "t", chunk=WHOLE)
    assert (chunked.ok, chunked.weak_reference) == (whole.ok, whole.weak_reference)
    assert chunked.max_abs_error == pytest.approx(whole.max_abs_error, nan_ok=True)
    assert chunked.rel_error == pytest.approx(whole.rel_error)
    return chunked


def test_values_are_compared_in_a_type_that_holds_them_exactly():
    for dtype, wide in ((torch.bfloat16, torch.float32), (torch.float16, torch.float32),
                        (torch.float32, torch.float64)):
        t = torch.ones(3, dtype=dtype)
        [(r, o)] = list(_finite_chunks(t, t, 8, torch.device("cpu")))
        assert r.dtype == o.dtype == wide


def test_one_bad_element_in_a_late_chunk_is_found_and_reported():
    ref = torch.randn(100, dtype=torch.float32)
    out = ref.clone()
    out[93] += 0.01 * ref.abs().max()
    got = both(ref, out)
    assert not got.ok and "1 of 100 elements outside" in got.message
    assert f"ref {float(ref[93]):.6g}" in got.message  # the worst element, from its own chunk


def test_a_small_error_spread_over_every_chunk_fails_on_the_norm():
    ref = torch.randn(100, dtype=torch.float32)
    got = both(ref, ref * (1 + 1.5e-4))
    assert not got.ok and "normalized error" in got.message and " 0 of 100 " in got.message


def test_nan_and_inf_in_different_chunks_are_tallied_over_all_of_them():
    ref = torch.randn(50)
    out = ref.clone()
    out[[3, 20, 45]] = float("nan")
    got = both(ref, out)
    assert not got.ok and "3 NaN value(s) where the reference has none" in got.message
    ref_nan = ref.clone()
    ref_nan[30] = float("nan")
    assert "numbers where the reference has NaN" in both(ref_nan, ref).message
    out_inf = ref.clone()
    out_inf[44] = float("inf")
    assert "Inf values do not match" in both(ref, out_inf).message
    ref_nan_inf, same = ref_nan.clone(), ref_nan.clone()
    ref_nan_inf[10] = same[10] = float("-inf")
    assert both(ref_nan_inf, same).ok  # matching specials, and the finite rest equal


def test_a_constant_output_fails_across_chunks_unless_the_reference_is_within_the_floor():
    ref = torch.randn(60)
    got = both(ref, torch.full_like(ref, float(ref.mean())))
    assert not got.ok and "output is constant" in got.message
    noise = torch.randn(60) * 1e-8  # the reference is its own noise: within a floor of 1.0
    assert both(noise, torch.zeros_like(noise), atol=3.0, rtol=3.0, floor=1.0).ok
    assert not both(noise, torch.zeros_like(noise), atol=3.0, rtol=3.0).ok  # no floor: it varies


def test_a_flat_reference_is_flagged_weak_over_all_its_chunks():
    flat = 1.0 + torch.randn(40) * 1e-6
    assert both(flat, flat.clone()).weak_reference
    varied = flat.clone()
    varied[39] = 5.0  # one element in the last chunk stops a constant passing
    assert not both(varied, varied.clone()).weak_reference


def test_an_empty_or_all_nan_pair_passes():
    assert both(torch.empty(0), torch.empty(0)).ok
    nan = torch.full((9,), float("nan"))
    assert both(nan, nan.clone()).ok


def test_without_a_gpu_nothing_is_staged():
    from mtmc.verify.tensor_compare import _staged

    ref, out = torch.randn(50), torch.randn(50)
    staged_ref, staged_out = _staged(ref, out, torch.device("cpu"), chunk=7)
    assert staged_ref is ref and staged_out is out
