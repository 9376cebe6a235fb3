"""Trusted comparison of candidate outputs with the reference (main process; no candidate code here).

Tolerance is per output dtype and scaled to the output: an element passes when
    |out - ref| <= atol * scale + rtol * |ref|,     scale = max |ref| over the tensor
and the tensor passes when also ||out - ref|| / ||ref|| <= max(atol, rtol). Scaling atol by the
output's own magnitude is what makes a zero output fail on small-magnitude tasks (KernelBench
#165, S8): with scale = max|ref|, zeros can only pass if every |ref| <= atol * max|ref|, i.e. never.
A constant output where the reference varies fails outright (memset kernels, S8), unless that
variation is the reference's own rounding noise (the float64 floor, below). If the reference is so
flat that its mean would pass the check, the case is flagged `weak_reference` (a task problem, S9;
the candidate is not punished for it).

NaN or Inf where the reference has none fails (unwritten `torch.empty` outputs show up as NaN
after the allocator is poisoned, S6). Tasks override the defaults with MTMC["atol"]/["rtol"];
MTMC["precision"] containing "tf32" loosens fp32 to TF32's rounding.

fp32 precision follows eager PyTorch on the same GPU: cuDNN runs fp32 convolutions on TF32 tensor
cores by default (torch.backends.cudnn.allow_tf32), matmuls strict. So a task whose reference
computes a convolution is held to the TF32 tolerance as if it listed "tf32" (`eager_precision`);
the reference itself still runs with TF32 off. Where eager's measured error (below) shows it computed
an output in fp32 after all (cuDNN picks an fp32 algorithm for some shapes), a candidate that errs
beyond what fp32 rounding explains (TF32_EVIDENCE, 1e-5 normalized) is refused
(TF32_BEYOND_EAGER_REFUSAL; the verifier's `tf32_follows_eager`).

The TF32 tolerance does not need to grow with the reduction length: with operands rounded to TF32
(10-bit mantissa) and the products summed exactly, conv2d outputs at K = C_in x kernel volume from 27
to 6400 (randn inputs, PyTorch's default weight init) had a normalized L2 error of 2.8-3.0e-4 when
rounded to nearest and 7.5-7.8e-4 when truncated (as tensor cores may read fp32 registers), and a
worst element of 1.9-4.4e-4 of (max|ref| + |ref|), against 2e-3: rounding errors of a K-term sum grow
as sqrt(K), as its value does. On an H100 the template's TF32 convs showed max |error| 0.7-2.3e-3
on KernelBench level-1/2 conv tasks, 1.1-2.5x eager cuDNN's own TF32 error
(benchmarks/probes/2026-11-26-conv).

That bound is relative to the output, and a task can shrink its output below the convolution it
computed: min(x, 0) then GELU leaves values about 30x smaller than the conv's (93_ConvTranspose2d_
Add_Min_GELU_Multiply on an H100: 1,077 of 277M elements 1.7x over), 101 layers of TF32 convs add up
(10_ResNet101), and a GroupNorm's mean is rounding noise around 0. So on a GPU the reference job also
runs the task as eager PyTorch does by default and records eager's own error per output, in the units
of the check above (`eager_error`); an output is then held to `EAGER_ERROR_MARGIN` times that, where
this is looser than the dtype's tolerance (flagged `eager_tolerance`). The margin covers the
template's 1.1-2.5x. The candidate cannot reach this number: it is measured in the reference job,
before any candidate runs, and it is 0 wherever eager computes what the reference does (the CPU).

The float64 floor. Some outputs are rounding noise in the reference itself: KernelBench level-2 #23
(Conv3d, GroupNorm, then the mean over all dims but the batch) is exactly 0, since a GroupNorm with
weight 1 and bias 0 has zero mean per group, and the fp32 reference's values of ~1e-8 are its own
rounding. Every correct candidate rounds otherwise and failed, on any device (cuDNN runs that 3D conv
in full fp32: eager's error is 0). So the reference job also runs each case in float64 (a deep copy
of the model, the floating inputs converted) and records the fp32 reference's own error against it,
per output (`reference_error`: eager_error's units, the float64 output in the candidate's place, so
the tolerance the truth itself would need). An output is held to EAGER_ERROR_MARGIN times the larger
of that and eager's error, where this is looser than the dtype's tolerance (flagged
`reference_noise`): no candidate is held to more accuracy than the reference has. On ordinary tasks
the floor is fp32 rounding, ~1e-7 (3e-7 against 1e-4: nothing changes). It counts up to
REFERENCE_ERROR_CAP = 1, the reference's own size (pure noise measures ~1), so a candidate stays
within 3 max|ref| + 3|ref| of every element and 3 ||ref|| in norm, bounded by the reference's
magnitude however far the float64 run strays; an fp32 reference that is all 0 gets no floor (its
tolerance is absolute, not scaled by the output). Where the floor widens the tolerance, the
constant-output check does not count variation within it: zeros, the true answer to #23, pass. A
floor below the tolerance changes nothing: a constant 1 still fails on softmax row sums (S9's
mean_softmax), whose reference varies only by its ~1e-7 rounding.

It runs on every device and case (measuring it only where eager's error is, convolutions on a GPU,
would miss the CPU and noise without a convolution, a GEMM's GroupNorm mean), for float32 outputs
only: a float64 reference is its own truth, fp16/bf16 tolerances already hold their rounding (their
tasks are also the GB-sized ones), and a task with no float32 output skips the run. Not for a forward
that draws random numbers (`case_io.OpNames.seeded`): its float64 twin draws other numbers, and the
floor would measure the randomness. The cost is one float64 forward per case in the reference job,
which runs once per task and is kept (engine.py): about 2x an fp32 forward on the CPU; on a GPU twice
the bytes, float64 GEMMs at about fp32's rate on an H100, cuDNN's float64 convolutions slower (not
measured). Memory: the float64 copy of one case's model, inputs and outputs, gone before the next
case; the comparison runs in float64 chunks. A forward that fails in float64 (dtype-specific code, out
of memory) gets floor 0, the tolerance of before, never an error. Like eager's error, the candidate
cannot reach it: measured before any candidate runs, kept with the expected outputs in the main
process. It trusts the task's forward to compute the same function in float64 (task code is trusted;
a forward that branches on its dtype would show as `reference_noise` flags on an ordinary task).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from mtmc.verify.tensor_compare import compare_values, float_chunks
from mtmc.verify.verdict import TF32_BEYOND_EAGER

DEFAULT_TOLERANCE: dict[torch.dtype, tuple[float, float]] = {  # dtype -> (atol, rtol)
    torch.float64: (1e-7, 1e-7),
    torch.float32: (1e-4, 1e-4),
    torch.float16: (1e-2, 1e-2),
    torch.bfloat16: (2e-2, 2e-2),
}
TF32_TOLERANCE = (2e-3, 2e-3)
EAGER_ERROR_MARGIN = 3.0  # a candidate may err up to this many times eager's own error (docstring)
EAGER_TOLERANCE_FLAG = ("eager_tolerance: an output was held to 3x the error eager PyTorch's own default "
                        "precision (TF32 convolutions) shows on it, above the dtype's tolerance")
# Eager's cuDNN does not run every fp32 convolution on TF32: on an H100 its error was exactly 0 on
# KernelBench level-2 21, 57, 67, 73, 82, 85, 87 and 90 (8 input channels) and level-1 54, 60 and 66
# (3), but TF32's on level-2 7 and 8 with the same 8 (benchmarks/probes/2026-11-26-conv/h100-runs.log
# and the 2026-11-27 precision probe), and KernelBench's own eval refused our TF32 programs on the
# first ones. The "tf32" allowance above comes from the op, not the measurement, so on its own it
# passes a TF32 program at an error eager does not make there. So where eager's error was measured (a
# GPU, a TF32 op) and is below the fp32 tolerance while the candidate's is above it, the output is
# refused (the verifier's `tf32_follows_eager`, on by default: the rule is "as eager runs this op on
# this GPU") or, with it off, only flagged. The candidate cannot move eager's side of this test:
# eager_errors and eager_measured come from the reference job (child.reference), a trusted child that
# runs before any candidate of the task and never sees candidate code, and they stay in the main
# process with the expected outputs; the candidate's child gets the inputs only.
# What fp32 rounding can explain once the TF32 allowance is unbacked: the normalized error at which an
# output counts as computed in TF32. fp32-exact programs err ~1e-7 (H100: 2.2e-7 on level-2 57's
# tf32x3 runs loop, <= 2.1e-6 on level-1 54-66's FMA loop), TF32 ones ~1e-4: level-2 87 and 90 at
# 8.8e-5 and 9.3e-5 passed the fp32 tolerance itself, and KernelBench's eval (absolute atol 1e-4)
# refused them while accepting eager with TF32 off. Widened, like the tolerance, to 3x eager's and the
# reference's own error (a long fp32 reduction's rounding).
TF32_EVIDENCE = 1e-5
TF32_BEYOND_EAGER_FLAG = ("tf32_beyond_eager: an output erred as TF32 does (normalized {cand:.1e}) where "
                          "eager PyTorch computed it in fp32 on this GPU (its error {eager:.1e}); more than "
                          "fp32 rounding explains (TF32_EVIDENCE)")
TF32_BEYOND_EAGER_REFUSAL = (
    "{label}: erred as TF32 does (normalized error {cand:.1e}, above the {fp32:.1e} fp32 rounding "
    "explains) where eager PyTorch computed this output in fp32 on this GPU (its error {eager:.1e}: cuDNN "
    "chose an fp32 algorithm for these shapes), so the fp32 tolerance applies (tf32_beyond_eager). Compute "
    "its "
    "convolutions fp32-exact: tl.dot with input_precision=\"ieee\" or \"tf32x3\" (the `precision ieee` / "
    "`precision tf32x3` steps) or fp32 FMAs, not TF32 dots")
REFERENCE_ERROR_CAP = 1.0  # the reference's own error counts up to its own size, no further (docstring)
REFERENCE_NOISE_FLAG = ("reference_noise: an output was held to 3x the fp32 reference's own rounding error "
                        "(against the same forward in float64), above the dtype's tolerance")


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float


def eager_precision(meta: dict[str, Any], eager_tf32: bool) -> dict[str, Any]:
    """The task's metadata with "tf32" among its precisions when its reference runs an op eager
    PyTorch runs on TF32, a convolution or a cuDNN RNN (case_io.EAGER_TF32_OPS; module docstring)."""
    precisions = tuple(meta.get("precision", ()))
    if not eager_tf32 or "tf32" in precisions:
        return meta
    return {**meta, "precision": [*precisions, "tf32"]}


def tolerance_for(dtype: torch.dtype, meta: dict[str, Any], eager_err: float = 0.0,
                  reference_err: float = 0.0) -> Tolerance:
    """The dtype's (or the task's) tolerance, widened to EAGER_ERROR_MARGIN x the larger of eager's
    own error and the reference's own error against float64 (the float64 floor)."""
    atol, rtol = DEFAULT_TOLERANCE.get(dtype, (1e-4, 1e-4))
    if dtype == torch.float32 and "tf32" in meta.get("precision", ()):
        atol, rtol = TF32_TOLERANCE
    atol, rtol = float(meta.get("atol", atol)), float(meta.get("rtol", rtol))
    widened = EAGER_ERROR_MARGIN * max(eager_err, reference_err)
    return Tolerance(max(atol, widened), max(rtol, widened))


def held_tolerance(dtype: torch.dtype, meta: dict[str, Any], eager_err: float = 0.0, floor: float = 0.0,
                   eager_measured: bool = False, tf32_follows_eager: bool = False) -> Tolerance:
    """tolerance_for's, but fp32's where compare_outputs refuses TF32's error (eager measured fp32
    there, `tf32_follows_eager`): what an output is held to in effect. timing.py holds a timed call to
    its untimed output within it, where the candidate's repeats differ (float atomics)."""
    if eager_measured and tf32_follows_eager and _tf32_unbacked(dtype, meta, eager_err):
        evidence = tf32_evidence(eager_err, floor)
        return Tolerance(evidence, evidence)
    return tolerance_for(dtype, meta, eager_err, floor)


def tf32_evidence(eager_err: float, reference_err: float) -> float:
    """The normalized error above which an fp32 output counts as computed in TF32 (TF32_EVIDENCE)."""
    return max(TF32_EVIDENCE, EAGER_ERROR_MARGIN * max(eager_err, reference_err))


def eager_error(ref: torch.Tensor, eager: torch.Tensor, chunk: int = 1 << 26) -> float:
    """The smallest t for which eager's output passes compare_tensor's checks with atol = rtol = t:
    the worst |eager - ref| / (max|ref| + |ref|) and the normalized error, over finite elements. 0
    where eager computes exactly the reference (no TF32 on the CPU) or the shapes differ."""
    return _error_and_scale(ref, eager, chunk)[0]


def reference_error(ref: torch.Tensor, truth: torch.Tensor, chunk: int = 1 << 26) -> float:
    """The float64 floor of one output: the fp32 reference's own error, the smallest tolerance at
    which `truth` (the same forward in float64) passes against it (eager_error's units), at most
    REFERENCE_ERROR_CAP. 0 for an output that is not float32 (a float64 reference is its own truth;
    fp16/bf16 tolerances already hold their rounding), and for a reference whose finite values are
    all 0: compare_tensor then scales the tolerance by 1, not by the output, so a floor would let
    anything near 0 pass where the fp32 output underflowed to 0."""
    if ref.dtype != torch.float32:
        return 0.0
    error, scale = _error_and_scale(ref, truth, chunk)
    return min(error, REFERENCE_ERROR_CAP) if scale > 0 else 0.0


def _error_and_scale(ref: torch.Tensor, other: torch.Tensor, chunk: int) -> tuple[float, float]:
    """eager_error's number for `other` against `ref`, and max|ref| over the elements compared."""
    if ref.shape != other.shape or not ref.is_floating_point() or ref.numel() == 0:
        return 0.0, 0.0
    # Two passes over float64 chunks (the scale first): no full-size temporary of a GB output.
    scale = max((float(rc.abs().max()) for rc, _ in _finite_chunks(ref, other, chunk) if rc.numel()),
                default=0.0)
    worst, diff_sq, ref_sq = 0.0, 0.0, 0.0
    for rc, ec in _finite_chunks(ref, other, chunk):
        diff = (ec - rc).abs()
        if diff.numel():
            worst = max(worst, float((diff / (scale + rc.abs()).clamp_min(1e-300)).max()))
        diff_sq += float(diff.square().sum())
        ref_sq += float(rc.square().sum())
    normalized = (diff_sq ** 0.5) / (ref_sq ** 0.5 if ref_sq > 0 else 1.0)
    return max(worst, normalized), scale


def _finite_chunks(ref: torch.Tensor, eager: torch.Tensor, chunk: int) -> Iterator[tuple[torch.Tensor, ...]]:
    """float64 copies of `chunk` elements at a time of both tensors, where both are finite."""
    for rc, ec in float_chunks(ref, eager, chunk, dtype=torch.float64):
        keep = torch.isfinite(rc) & torch.isfinite(ec)
        yield rc[keep], ec[keep]


@dataclass
class Comparison:
    ok: bool
    message: str = ""
    max_abs_error: float = 0.0
    rel_error: float = 0.0
    flags: list[str] = field(default_factory=list)
    reason: str = ""  # a failure's Verdict.reason code (TF32_BEYOND_EAGER), else ""


def compare_case(expected: dict[str, Any], got: dict[str, Any], meta: dict[str, Any],
                 expected_device: str, label: str, tf32_follows_eager: bool = False) -> Comparison:
    """One case: the reference outputs vs the candidate's outputs and side effects
    (`tf32_follows_eager`: compare_outputs')."""
    if got["type_errors"]:
        return Comparison(False, f"{label}: {'; '.join(got['type_errors'])} (S13)")
    if got["kind"] != expected["kind"] or len(got["outputs"]) != len(expected["outputs"]):
        return Comparison(False, f"{label}: returned {got['kind']} of {len(got['outputs'])} tensor(s), "
                          f"the reference returns {expected['kind']} of {len(expected['outputs'])}")
    wrong_device = [d for d in got["devices"] if torch.device(d).type != expected_device]
    if wrong_device:
        return Comparison(False, f"{label}: output on {wrong_device[0]}, expected {expected_device}")
    result = compare_outputs(expected["outputs"], got["outputs"], meta, label, expected.get("eager_errors"),
                             expected.get("reference_errors"), bool(expected.get("eager_measured")),
                             tf32_follows_eager)
    if not result.ok:
        return result
    if got["mutated_inputs"]:
        result.ok = False
        result.message = (f"{label}: forward modified input(s) {got['mutated_inputs']}; inputs must be "
                          "left unchanged (S7)")
    return result


def compare_outputs(refs: list[torch.Tensor], outs: list[torch.Tensor], meta: dict[str, Any],
                    label: str, eager_errors: list[float] | None = None,
                    reference_errors: list[float] | None = None, eager_measured: bool = False,
                    tf32_follows_eager: bool = False) -> Comparison:
    """Each output against its reference; `eager_errors` and `reference_errors` (one per output,
    from the reference job) widen an output's tolerance to what eager PyTorch's own default
    precision needs, and to what the fp32 reference itself is accurate to (the float64 floor).
    `eager_measured`: eager_errors were measured (a GPU, an op eager runs on TF32), so a 0 means eager
    computed the output in fp32. An output that passes only by the TF32 allowance where eager computed
    it in fp32 is refused with `tf32_follows_eager` (reason TF32_BEYOND_EAGER), else flagged."""
    if len(outs) != len(refs):
        return Comparison(False, f"{label}: {len(outs)} output tensor(s) where the reference has {len(refs)}")
    eager_errors = eager_errors or [0.0] * len(refs)
    reference_errors = reference_errors or [0.0] * len(refs)
    total = Comparison(True)
    for i, (ref, out) in enumerate(zip(refs, outs, strict=True)):
        floor, plain = reference_errors[i], tolerance_for(ref.dtype, meta)
        # The floor counts only where it widens the tolerance, where the reference is noisier than a
        # candidate is held to: softmax row sums, 1 to within 1e-7, still reject a constant 1 (S9).
        noisy = tolerance_for(ref.dtype, meta, 0.0, floor) != plain
        tol = tolerance_for(ref.dtype, meta, eager_errors[i], floor)
        one = compare_tensor(ref, out, tol, f"{label}, output {i}", floor if noisy else 0.0)
        if tolerance_for(ref.dtype, meta, eager_errors[i]) != plain:
            one.flags.append(EAGER_TOLERANCE_FLAG)
        if noisy:
            one.flags.append(REFERENCE_NOISE_FLAG)
        if eager_measured and one.ok and _tf32_beyond_eager(ref.dtype, meta, eager_errors[i], floor,
                                                            one.rel_error):
            _tf32_verdict(one, f"{label}, output {i}", eager_errors[i], floor, tf32_follows_eager)
        total.max_abs_error = max(total.max_abs_error, one.max_abs_error)
        total.rel_error = max(total.rel_error, one.rel_error)
        total.flags += one.flags
        if not one.ok:
            total.ok, total.message, total.reason = False, one.message, one.reason
            return total
    return total


def _tf32_beyond_eager(dtype: torch.dtype, meta: dict[str, Any], eager_err: float, reference_err: float,
                       rel_error: float) -> bool:
    """A TF32 allowance the measurement does not back: eager's own error within the fp32 tolerance,
    the candidate's beyond what fp32 rounding explains (tf32_evidence; TF32_BEYOND_EAGER_FLAG)."""
    return _tf32_unbacked(dtype, meta, eager_err) and tf32_evidence(eager_err, reference_err) < rel_error


def _tf32_unbacked(dtype: torch.dtype, meta: dict[str, Any], eager_err: float) -> bool:
    """An fp32 output under a TF32 allowance where eager's (measured) error is within fp32's tolerance."""
    fp32 = DEFAULT_TOLERANCE[torch.float32][1]
    return dtype == torch.float32 and "tf32" in meta.get("precision", ()) and eager_err < fp32


def _tf32_verdict(one: Comparison, label: str, eager_err: float, reference_err: float, refuse: bool) -> None:
    """Refuse (`refuse`) or flag an output that passed by a TF32 allowance eager's measurement does not
    back (TF32_BEYOND_EAGER_REFUSAL, TF32_BEYOND_EAGER_FLAG)."""
    if not refuse:
        one.flags.append(TF32_BEYOND_EAGER_FLAG.format(cand=one.rel_error, eager=eager_err))
        return
    fp32 = tf32_evidence(eager_err, reference_err)
    one.ok, one.reason = False, TF32_BEYOND_EAGER
    one.message = TF32_BEYOND_EAGER_REFUSAL.format(label=label, cand=one.rel_error, fp32=fp32,
                                                   eager=eager_err)


def compare_tensor(ref: torch.Tensor, out: torch.Tensor, tol: Tolerance, label: str,
                   floor: float = 0.0) -> Comparison:
    """`floor`: the reference's own error against float64 (reference_error); variation within it
    is not variation to the constant-output check (a correct output of that noise may be 0)."""
    if out.shape != ref.shape:
        return Comparison(False, f"{label}: shape {list(out.shape)}, expected {list(ref.shape)}")
    if out.dtype != ref.dtype:
        return Comparison(False, f"{label}: dtype {out.dtype}, expected {ref.dtype}")
    if not ref.is_floating_point():
        wrong = int((out != ref).sum())
        return Comparison(wrong == 0, f"{label}: {wrong} of {ref.numel()} elements differ" if wrong else "")
    got = compare_values(ref, out, tol.atol, tol.rtol, floor, label)
    result = Comparison(got.ok, got.message, max_abs_error=got.max_abs_error, rel_error=got.rel_error)
    if got.weak_reference:
        result.flags.append(f"weak_reference: a constant output would pass {label} (S9)")
    return result


def compare_runs(first: list[torch.Tensor], second: list[torch.Tensor] | None, deterministic: bool,
                 uses_atomics: bool, refs: list[torch.Tensor], meta: dict[str, Any],
                 label: str, eager_errors: list[float] | None = None,
                 reference_errors: list[float] | None = None, eager_measured: bool = False,
                 tf32_follows_eager: bool = False) -> Comparison:
    """Two runs on the same inputs must be bitwise equal (S15, S10), except float atomics may
    reorder additions: then both runs must pass the tolerance (compare_outputs' rule, the TF32 one
    included: a second run must not take an allowance the first was refused) and the verdict is
    flagged."""
    if deterministic:
        return Comparison(True)
    if second is None:
        return Comparison(False, f"{label}: the second run on the same inputs returned something else")
    diff = max((float((a.double() - b.double()).abs().nan_to_num(nan=float("inf")).max())
                for a, b in zip(first, second, strict=False) if a.shape == b.shape), default=float("inf"))
    if not uses_atomics:
        return Comparison(False, f"{label}: two runs on the same inputs differ (max {diff:.3g}): "
                          "the kernel reads uninitialised memory or keeps state between calls (S15/S10)")
    again = compare_outputs(refs, second, meta, f"{label}, second run", eager_errors, reference_errors,
                            eager_measured, tf32_follows_eager)
    again.flags.append("nondeterministic: atomics reorder float additions")
    return again
