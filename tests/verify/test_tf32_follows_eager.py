"""fp32 follows eager on the same GPU (issue 22): an fp32 output that passes only by a convolution's TF32
allowance, where eager computed it in fp32, is refused with the verifier's `tf32_follows_eager` (on by
default) and only flagged with it off; the refusal's reason reaches the verdict, the trusted batch's too.

The CPU has no TF32 (eager's error is never measured there), so the reports are built by hand, as a GPU
reference job would record them (eager_errors 0, eager_measured True)."""

from __future__ import annotations

import inspect
from types import SimpleNamespace

import torch

from mtmc.program import Program
from mtmc.tasks import Task
from mtmc.verify import batch
from mtmc.verify.engine import Engine, Settings
from mtmc.verify.judging import Reference, judge_correctness, refuse_tf32_beyond_eager, timing_outputs_check
from mtmc.verify.static_report import StaticReport
from mtmc.verify.verdict import TF32_BEYOND_EAGER, Status, Verdict
from mtmc.verify.verifier import InterpreterVerifier, LocalVerifier

CONV_TASK = '''
import torch

class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(8, 16, 3)

    def forward(self, x):
        return self.conv(x)

def get_inputs():
    return [torch.randn(1, 8, 9, 9)]

def get_init_inputs():
    return []
{mtmc}'''


def conv_task(mtmc: str = "") -> Task:
    return Task(name="conv_tf32", source=CONV_TASK.format(mtmc=mtmc))


def reference_and_result(out: torch.Tensor, ref: torch.Tensor) -> tuple[Reference, dict]:
    """A GPU reference job's record where eager computed the conv in fp32, and a candidate's report."""
    expected = {"kind": "single", "outputs": [ref], "eager_errors": [0.0], "eager_measured": True,
                "reference_errors": [0.0]}
    reference = Reference(cases=[{"sizes": {}, "model_seed": 0}], expected=[expected], timing_expected=None,
                          inputs_path="", eager_tf32=True)
    got = {"type_errors": [], "kind": "single", "outputs": [out], "devices": ["cuda:0"], "mutated_inputs": [],
           "second_outputs": None, "deterministic": True}
    return reference, {"cases": [got], "launches": {"conv_kernel": 2}}


def judged(task: Task, out: torch.Tensor, ref: torch.Tensor, follows: bool) -> Verdict:
    reference, result = reference_and_result(out, ref)
    return judge_correctness(task, StaticReport(), reference, result, Verdict(Status.OK), "cuda", follows)


def test_a_tf32_output_where_eager_ran_fp32_is_refused_with_its_reason_or_flagged_with_the_knob_off():
    ref = torch.randn(4000)
    tf32 = ref + 1e-3 * ref.abs() * torch.randn(ref.shape, generator=torch.Generator().manual_seed(1)).sign()
    refused = judged(conv_task(), tf32, ref, True)
    assert refused.status == Status.INCORRECT and refused.reason == TF32_BEYOND_EAGER
    assert "computed this output in fp32 on this GPU" in refused.message and "tf32x3" in refused.message
    flagged = judged(conv_task(), tf32, ref, False)
    assert flagged.ok and not flagged.reason and any(f.startswith("tf32_beyond_eager") for f in flagged.flags)
    # fp32-exact: accepted either way, nothing flagged
    exact = judged(conv_task(), ref * (1 + 1e-7), ref, True)
    assert exact.ok and not any(f.startswith("tf32_beyond_eager") for f in exact.flags)
    # a verdict's reason survives the trip through the graph's state (to_dict / from_dict)
    assert Verdict.from_dict(refused.to_dict()).reason == TF32_BEYOND_EAGER


def test_a_tf32_error_under_the_fp32_tolerance_is_still_refused_but_fp32_rounding_is_not():
    # level-2 87 / 90 on an H100: TF32 outputs at 8.8e-5 / 9.3e-5 normalized passed the 1e-4 fp32
    # tolerance and KernelBench's eval refused them; fp32-exact forms err ~2e-7
    ref = torch.randn(4000)
    noise = torch.randn(ref.shape, generator=torch.Generator().manual_seed(2)).sign()
    tf32_like = ref + 4e-5 * ref.abs().max() * noise
    refused = judged(conv_task(), tf32_like, ref, True)
    assert refused.status == Status.INCORRECT and refused.reason == TF32_BEYOND_EAGER
    assert judged(conv_task(), ref + 2e-7 * ref.abs().max() * noise, ref, True).ok
    # a reference whose own fp32 rounding is larger (a long reduction) widens what counts as fp32
    reference, result = reference_and_result(tf32_like, ref)
    reference.expected[0]["reference_errors"] = [1e-4]
    widened = judge_correctness(conv_task(), StaticReport(), reference, result, Verdict(Status.OK), "cuda",
                                True)
    assert widened.ok


def test_a_task_that_lists_tf32_itself_keeps_its_allowance():
    allowed = conv_task('MTMC = {"precision": ["tf32"]}')
    assert not refuse_tf32_beyond_eager(allowed, True) and refuse_tf32_beyond_eager(conv_task(), True)
    assert not refuse_tf32_beyond_eager(conv_task(), False)
    ref = torch.randn(4000)
    assert judged(allowed, ref * (1 + 1e-3), ref, True).ok


def test_the_knob_is_on_by_default_and_enters_the_cache_key():
    assert Settings().tf32_follows_eager
    assert Settings().fingerprint() != Settings(tf32_follows_eager=False).fingerprint()
    for backend in (LocalVerifier, InterpreterVerifier):
        assert inspect.signature(backend).parameters["tf32_follows_eager"].default is True


def test_a_trusted_batch_applies_the_same_rule_and_keeps_the_reason():
    reference, _ = reference_and_result(torch.zeros(3), torch.zeros(3))
    engine = SimpleNamespace(device_type="cuda", settings=Settings())
    job = batch._job(engine, conv_task(), [Program("src")], reference)
    assert job["refuse_tf32"] and job["errors"][0]["eager_measured"]
    off = batch._job(SimpleNamespace(device_type="cuda", settings=Settings(tf32_follows_eager=False)),
                     conv_task(), [Program("src")], reference)
    assert not off["refuse_tf32"]
    report = {"status": "incorrect", "message": "refused", "reason": TF32_BEYOND_EAGER}
    verdict = batch._verdict(engine, conv_task(), reference, report, {})
    assert verdict.status == Status.INCORRECT and verdict.reason == TF32_BEYOND_EAGER


def tf32_like(ref: torch.Tensor) -> torch.Tensor:
    """An output with TF32's error (normalized ~1e-3: above fp32's 1e-4, within TF32's 2e-3)."""
    noise = torch.randn(ref.shape, generator=torch.Generator().manual_seed(1)).sign()
    return ref + 1e-3 * ref.abs() * noise


def switched(follows: bool) -> tuple[Verdict, dict]:
    """A candidate exact in its checked case and TF32 on the timing set (it tells the calls apart by
    count): the engine's GPU judging of its report, the timed calls agreeing with their untimed outputs."""
    ref = torch.randn(4000)
    reference, result = reference_and_result(ref.clone(), ref)
    reference.timing_sets, reference.timing_expected = [0], [None]
    result["timing_outputs"] = [[tf32_like(ref)]]
    result["share"] = {"share": 1.0}
    mine = {"mismatches": 0, "reused_storage": 0, "reported_ms": 1.0, "median_ms": 1.0}
    result["timing"] = {"timings": {"candidate": mine}, "threads_started": 0, "events_ms": 1.0,
                        "wall_ms": 2.0}
    verdict = judged(conv_task(), ref.clone(), ref, follows)
    assert verdict.ok  # the checked case alone passes
    engine = SimpleNamespace(settings=Settings(tf32_follows_eager=follows), judge_speed=lambda *args: None)
    Engine._judge_gpu(engine, conv_task(), reference, result, verdict)
    return verdict, result


def test_a_switch_to_tf32_on_the_timing_sets_is_refused_as_in_the_cases():
    refused, _ = switched(True)
    assert refused.status == Status.INCORRECT and refused.reason == TF32_BEYOND_EAGER
    assert "timing input set 0" in refused.message and refused.candidate_ms is None
    flagged, _ = switched(False)
    assert flagged.ok and flagged.candidate_ms == 1.0
    assert any(f.startswith("tf32_beyond_eager") for f in flagged.flags)


def test_the_timing_sets_check_takes_the_knob_and_the_tasks_own_allowance():
    ref = torch.randn(4000)
    reference, result = reference_and_result(ref.clone(), ref)
    reference.timing_sets, reference.timing_expected = [0], [None]
    result["timing_outputs"] = [[tf32_like(ref)]]
    assert timing_outputs_check(conv_task(), reference, result).reason == TF32_BEYOND_EAGER  # on by default
    assert timing_outputs_check(conv_task(), reference, result, False).ok
    assert timing_outputs_check(conv_task('MTMC = {"precision": ["tf32"]}'), reference, result, True).ok
    reference.expected[0]["eager_measured"] = False  # eager's error not measured (a CPU): the allowance
    assert timing_outputs_check(conv_task(), reference, result, True).ok


def test_a_second_run_with_atomics_is_held_to_the_same_rule():
    ref = torch.randn(4000)
    reference, result = reference_and_result(ref.clone(), ref)
    result["cases"][0].update(deterministic=False, second_outputs=[tf32_like(ref)])
    verdict = judge_correctness(conv_task(), StaticReport(uses_atomics=True), reference, result,
                                Verdict(Status.OK), "cuda", True)
    assert verdict.reason == TF32_BEYOND_EAGER and "second run" in verdict.message
    off = judge_correctness(conv_task(), StaticReport(uses_atomics=True), reference, result,
                            Verdict(Status.OK), "cuda", False)
    assert off.ok and "nondeterministic: atomics reorder float additions" in off.flags
