"""The untimed outputs on the timing sets: what travels (only what differs from a case already
judged) and how the main process judges them. The GPU run itself is in test_gpu.py."""

from types import SimpleNamespace

import torch
from corpus_index import TASKS

from mtmc.tasks import load_task
from mtmc.verify import Status
from mtmc.verify.bitwise import same
from mtmc.verify.child import _unless_same
from mtmc.verify.static import check_source
from mtmc.verify.trusted import TrustedRuns
from mtmc.verify.verifier import Engine, Reference, Settings, _timing_outputs_problem

TASK = load_task(TASKS / "pointwise.py")


def test_outputs_equal_to_their_case_do_not_travel():
    case = [torch.tensor([1.0, float("nan"), 3.0])]
    assert _unless_same([case[0].clone()], case) is None
    changed = [torch.tensor([1.0, float("nan"), 3.5])]
    assert same(_unless_same(changed, case)[0], changed[0])
    assert _unless_same([case[0], case[0]], case) is not None  # another number of outputs


def _reference(timing_expected):
    cases = [{"sizes": {}, "model_seed": s} for s in range(3)] + [{"sizes": {"n": 9}, "model_seed": 0}]
    expected = [{"outputs": [torch.full((4,), float(i))]} for i in range(4)]
    return Reference(cases, expected, timing_expected, "unused", timing_sets=[0, 1, 2])


def _result(timing_outputs, case_outputs=None):
    outputs = case_outputs or [[torch.full((4,), float(i))] for i in range(4)]
    return {"cases": [{"outputs": o} for o in outputs], "timing_outputs": timing_outputs}


def test_sets_both_sides_found_equal_to_their_case_need_no_comparison():
    assert _timing_outputs_problem(TASK, _reference([None] * 3), _result([None] * 3)) == ""


def test_an_untimed_output_that_differs_is_judged_against_the_case_reference():
    wrong = [None, [torch.full((4,), 5.0)], None]
    message = _timing_outputs_problem(TASK, _reference([None] * 3), _result(wrong))
    assert "timing input set 1" in message


def test_a_reference_that_differs_from_its_case_is_judged_against_the_candidate_case_output():
    # A model with weights: the timing model (case 0's) differs from case 2's own model.
    reference = _reference([None, None, [torch.full((4,), 7.0)]])
    assert "timing input set 2" in _timing_outputs_problem(TASK, reference, _result([None] * 3))
    matching = _result([None, None, [torch.full((4,), 7.0)]])
    assert _timing_outputs_problem(TASK, reference, matching) == ""


def test_only_the_first_gpu_size_gets_every_seed():
    gpu = SimpleNamespace(settings=Settings(seeds=3), device_type="cuda")
    cpu = SimpleNamespace(settings=Settings(seeds=3), device_type="cpu")
    assert [TrustedRuns._seeds(gpu, j) for j in range(3)] == [3, 1, 1]
    assert [TrustedRuns._seeds(cpu, j) for j in range(3)] == [3, 3, 3]


def test_reference_size_counts_every_kept_tensor():
    reference = _reference([None, [torch.zeros(10)], None])
    assert reference.nbytes == 4 * 4 * 4 + 10 * 4


def test_missing_timing_output_sets_fail():
    assert "2 untimed output sets came back for 3" in _timing_outputs_problem(
        TASK, _reference([None] * 3), _result([None] * 2))


def test_a_child_that_returns_fewer_cases_than_asked_is_rejected():
    result = _result(None) | {"launches": {"k": 4}, "tampered": [], "threads_started": 0}
    result["cases"] = result["cases"][:2]
    verdict = Engine._judge_run(None, TASK, check_source(""), _reference(None), result)
    assert verdict.status is Status.REJECTED and "results for 2 of 4 cases" in verdict.message


def test_buffers_pass_a_python_scalar_input_through():
    # KernelBench's 5_Matrix_scalar_multiplication takes (A, 3.14): the timing buffers copied every
    # input with .to() and the candidate job died with "'float' object has no attribute 'to'" (H100)
    from mtmc.verify.timing import device_buffers, load_set
    sets = [[torch.full((3, 5), float(k)), 3.14] for k in range(2)]
    buffers = device_buffers(sets[0], torch.device("cpu"))
    assert buffers[1] == 3.14 and buffers[0] is not sets[0][0]
    load_set(buffers, sets[1])
    assert torch.equal(buffers[0], sets[1][0]) and buffers[1] == 3.14
