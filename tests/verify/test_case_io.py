"""Input fingerprints (mtmc/verify/case_io.py): a candidate's regenerated inputs must match the
reference's, for inputs holding NaN or infinities too, and without a float64 copy of a whole tensor.
Eager's error and the float64 floor, measured on the reference's side."""

import pytest
import torch

from mtmc.tasks import Task
from mtmc.verify import case_io
from mtmc.verify.case_io import fingerprint, tensor_summary
from mtmc.verify.child import load_inputs, reference

SPECIALS_SOURCE = '''
import torch


class Model(torch.nn.Module):
    def forward(self, x, mask):
        return torch.nan_to_num(x, nan=0.0, posinf=1.0, neginf=-1.0) * mask


def get_inputs():
    x = torch.randn(5, 7)
    x[0, 0], x[1, 1], x[2, 2] = float("nan"), float("inf"), float("-inf")
    return [x, torch.rand(5, 7) > 0.5]


def get_init_inputs():
    return []
'''


def test_a_tensor_with_nan_and_infinities_matches_its_regeneration_and_not_a_changed_one():
    x = torch.randn(5, 7)
    x[0, 0], x[1, 1], x[2, 2] = float("nan"), float("inf"), float("-inf")
    assert fingerprint([x, 3]) == fingerprint([x.clone(), 3])
    changed = x.clone()
    changed[4, 6] += 1.0
    assert fingerprint([changed, 3]) != fingerprint([x, 3])
    one_more_nan = x.clone()
    one_more_nan[3, 3] = float("nan")
    assert tensor_summary(one_more_nan)[3:] == [2, 1, 1]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool, torch.complex64])
def test_the_chunked_sum_equals_the_whole_sum(monkeypatch, dtype):
    values = (torch.randn(101) * 10).to(dtype) if dtype != torch.bool else torch.rand(101) > 0.5
    whole = tensor_summary(values)
    monkeypatch.setattr(case_io, "FINGERPRINT_CHUNK", 8)  # 13 chunks, the last one partial
    chunked = tensor_summary(values)
    assert chunked[:2] == whole[:2] and chunked[3:] == whole[3:]
    assert chunked[2] == pytest.approx(whole[2], rel=1e-12, abs=1e-9)


def test_a_task_whose_inputs_hold_nan_regenerates_them_as_the_reference_saw_them(tmp_path):
    task = Task(name="specials", source=SPECIALS_SOURCE)
    cases = [{"sizes": {}, "model_seed": 0, "input_seed": 1}]
    path = str(tmp_path / "inputs.pt")
    reference(task.name, task.source, cases, "cpu", path, None)
    data = load_inputs(path, "cpu")  # raised "get_inputs is not deterministic" when NaN was summed
    assert torch.isnan(data["cases"][0]["inputs"][0][0, 0])


class _ReadsTheTF32Flag(torch.nn.Module):
    """Computes 1e-3 off when cuDNN may use TF32, as eager's default-precision conv does on a GPU."""

    def forward(self, x):
        return x * (1.0 + 1e-3 * torch.backends.cudnn.allow_tf32)


def test_eager_errors_run_eagers_default_precision_then_restore_the_references():
    model, x = _ReadsTheTF32Flag(), torch.randn(50)
    case_io.precise_reference()
    ref = model(x)
    [error] = case_io.eager_errors(model, [x], [ref])
    assert error == pytest.approx(1e-3, rel=1e-3)
    assert torch.backends.cudnn.allow_tf32 is False  # the reference's precision is back


class _GroupNormMean(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.GroupNorm(2, 4)

    def forward(self, x):
        return self.norm(x).mean(dim=[1, 2])


def test_reference_errors_run_a_float64_twin_and_leave_the_reference_model_alone():
    torch.manual_seed(0)
    model, x = _GroupNormMean(), torch.randn(3, 4, 50)
    with torch.no_grad():
        ref = model(x)
    assert case_io.reference_errors(model, [x], [ref]) == [1.0]  # noise around 0: the cap
    assert model.norm.weight.dtype == torch.float32 and x.dtype == torch.float32
    assert case_io.reference_errors(torch.nn.Identity(), [x], [x.clone()]) == [0.0]


class _Float32Constant(torch.nn.Module):
    """Dtype-specific code: a float32 tensor made inside forward, which a float64 x cannot multiply."""

    def forward(self, x):
        return x @ torch.ones(x.shape[-1], 2)


class _Counted(torch.nn.Module):
    calls = 0

    def forward(self, x):
        _Counted.calls += 1
        return x.half()


def test_a_forward_that_fails_in_float64_gets_no_floor_and_half_outputs_skip_the_run():
    x = torch.randn(3, 5)
    assert case_io.reference_errors(_Float32Constant(), [x], [_Float32Constant()(x)]) == [0.0]
    assert case_io.reference_errors(_Counted(), [x], [x.half()]) == [0.0] and _Counted.calls == 0


def test_op_names_say_whether_a_forward_drew_random_numbers():
    with case_io.OpNames() as seen:
        torch.relu(torch.ones(3)).mean()
    assert not seen.seeded
    with case_io.OpNames() as seen:
        torch.nn.functional.dropout(torch.ones(3), 0.5, training=True)
    assert seen.seeded


def test_a_fresh_copy_is_a_new_tensor_on_the_device_asked_for_with_the_same_values():
    pristine = [torch.randn(3, 5).t(), 7]  # a non-contiguous tensor and a plain value
    [copy, seven] = case_io.fresh_copy(pristine, "cpu")
    assert seven == 7 and torch.equal(copy, pristine[0]) and copy.stride() == pristine[0].stride()
    copy.zero_()
    assert pristine[0].abs().sum() > 0  # the candidate's copy shares nothing with the pristine one
    assert case_io.to_device(pristine, "cpu")[0] is pristine[0]  # already there: no copy


def test_inputs_on_the_host_stay_where_they_are_and_have_no_resident_limit():
    host = [torch.randn(4), 2]
    assert case_io._parked(host) is host  # only device tensors are moved
    assert case_io.resident_budget("cpu") == float("inf")  # nothing to park to

def test_the_cases_stay_on_the_device_only_if_all_of_them_fit_its_share(tmp_path, monkeypatch):
    """load_inputs keeps every case on the device if their inputs together fit resident_budget, else
    parks every one (the host stands in for a GPU here: _parked records what it is handed). The sizes
    come from the fingerprints, before any input is made."""
    task = Task(name="specials", source=SPECIALS_SOURCE)
    cases = [{"sizes": {}, "model_seed": 0, "input_seed": seed} for seed in (1, 2, 3)]
    path = str(tmp_path / "inputs.pt")
    reference(task.name, task.source, cases, "cpu", path, None)
    first = load_inputs(path, "cpu")["cases"][0]
    one_case = sum(t.nbytes for t in first["inputs"] if isinstance(t, torch.Tensor))
    assert case_io.fingerprint_bytes(first["fingerprint"]) == one_case == 5 * 7 * (4 + 1)  # fp32, bool
    parked = []
    monkeypatch.setattr(case_io, "_parked", lambda inputs: parked.append(inputs) or inputs)
    monkeypatch.setattr(case_io, "resident_budget", lambda device: 3 * one_case)
    load_inputs(path, "cpu")
    assert parked == []
    monkeypatch.setattr(case_io, "resident_budget", lambda device: 3 * one_case - 1)
    data = load_inputs(path, "cpu")
    assert parked == [c["inputs"] for c in data["cases"]]


def test_the_timing_sets_go_to_the_device_only_if_all_of_them_fit_its_share(monkeypatch):
    """The timing loop copies a set into its buffers before each call, so sets that do not fit the
    device's share wait on the host (the meta device stands in for a GPU here)."""
    sets = [[torch.randn(5, 7), 2], [torch.randn(5, 7), 2]]
    data = {"cases": [{"inputs": s, "out_meta": [[[5], "torch.float32"]]} for s in sets],
            "timing": {"sets": [0, 1]}}
    monkeypatch.setattr(case_io, "free_bytes", lambda device: 2**40)  # room for a lone set: not for two
    monkeypatch.setattr(case_io, "resident_budget", lambda device: 2 * 5 * 7 * 4)
    assert [t.device.type for t, _ in case_io.timing_sets(data, "meta")] == ["meta", "meta"]
    monkeypatch.setattr(case_io, "resident_budget", lambda device: 2 * 5 * 7 * 4 - 1)
    kept = case_io.timing_sets(data, "meta")
    assert [t.device.type for t, _ in kept] == ["cpu", "cpu"] and kept[0][0] is sets[0][0]


def test_a_lone_timing_set_past_the_share_stays_on_the_device_if_it_fits_beside_the_timing(monkeypatch):
    """The large-case plan's one timing set (45_Average_Pooling_2D: 16 GiB of inputs, 0.13 GiB of
    outputs) crosses once and is restored on the device, where it and the timing's working copy, with
    3x the outputs, take at most half the memory free to the job (case_io.TIMING_FREE_SHARE)."""
    gib = 2**30
    monkeypatch.setattr(case_io, "jobs_per_gpu", lambda: 1)
    assert case_io.one_timing_set_fits([16 * gib], gib // 8, 78 * gib)  # an H100 after the cases
    assert not case_io.one_timing_set_fits([16 * gib], gib // 8, 64 * gib)  # 32.4 GiB past half of 64
    assert case_io.one_timing_set_fits([10 * gib], 3 * gib, 2 * (20 + 9) * gib)  # the outputs count 3x
    assert not case_io.one_timing_set_fits([10 * gib], 3 * gib, 2 * (20 + 9) * gib - 1)
    assert not case_io.one_timing_set_fits([9 * gib] * 3, 0, 10**15)  # several sets stay parked (76_)
    monkeypatch.setattr(case_io, "jobs_per_gpu", lambda: 2)  # shared mode: the job's part of the GPU
    assert not case_io.one_timing_set_fits([16 * gib], gib // 8, 78 * gib)
    # in timing_sets: a set past the resident share, moved to the device only with the room
    data = {"cases": [{"inputs": [torch.randn(5, 7), 2], "out_meta": [[[5], "torch.float32"]]}],
            "timing": {"sets": [0]}}
    monkeypatch.setattr(case_io, "jobs_per_gpu", lambda: 1)
    monkeypatch.setattr(case_io, "resident_budget", lambda device: 0)
    monkeypatch.setattr(case_io, "free_bytes", lambda device: 2 * (2 * 5 * 7 * 4 + 3 * 5 * 4))
    assert [t.device.type for t, _ in case_io.timing_sets(data, "meta")] == ["meta"]
    monkeypatch.setattr(case_io, "free_bytes", lambda device: 2 * (2 * 5 * 7 * 4 + 3 * 5 * 4) - 1)
    assert [t.device.type for t, _ in case_io.timing_sets(data, "meta")] == ["cpu"]


def test_off_a_gpu_no_memory_is_free_for_a_timing_set():
    assert case_io.free_bytes("cpu") == 0 and case_io.free_bytes("meta") == 0


def test_the_resident_share_is_the_workers_setting_else_the_default(monkeypatch):
    monkeypatch.delenv(case_io.RESIDENT_SHARE_ENV, raising=False)
    assert case_io.resident_share() == case_io.RESIDENT_SHARE
    monkeypatch.setenv(case_io.RESIDENT_SHARE_ENV, "0.5")
    assert case_io.resident_share() == 0.5


def test_in_one_gpu_mode_a_lone_timing_set_is_measured_against_the_gpu_not_a_workers_split(monkeypatch):
    """One-GPU mode: the timing's working memory is taken and given back under the GPU's lock, so the
    workers' count does not divide the free memory (the others' resident data is already out of it);
    a 2 GiB set of a built-in task stays on the device beside 12 workers (it was parked, and crossed
    PCIe at every timed call: 4-8 s of timing on an H200, 2026-11-28)."""
    gib = 2**30
    monkeypatch.setenv(case_io.JOBS_PER_GPU_ENV, "12")
    monkeypatch.delenv(case_io.GPU_LOCK_ENV, raising=False)
    assert case_io.locked_jobs() == 12 and not case_io.one_timing_set_fits([2 * gib], 2 * gib, 60 * gib)
    monkeypatch.setenv(case_io.GPU_LOCK_ENV, "1")
    assert case_io.locked_jobs() == 1 and case_io.one_timing_set_fits([2 * gib], 2 * gib, 60 * gib)
    assert not case_io.one_timing_set_fits([2 * gib], 2 * gib, 20 * gib - 1)  # 10 GiB past half


def test_a_job_alone_on_the_gpu_keeps_inputs_that_fit_its_free_memory(tmp_path, monkeypatch):
    """load_inputs(alone=True), one-GPU mode's baseline job (whole under the lock): resident if the
    inputs fit half the free memory (its_room), whatever the workers' split share says."""
    task = Task(name="specials", source=SPECIALS_SOURCE)
    path = str(tmp_path / "inputs.pt")
    reference(task.name, task.source, [{"sizes": {}, "model_seed": 0, "input_seed": 1}], "cpu", path, None)
    one_case = 5 * 7 * (4 + 1)
    parked = []
    monkeypatch.setattr(case_io, "_parked", lambda inputs: parked.append(inputs) or inputs)
    monkeypatch.setattr(case_io, "resident_budget", lambda device: 0)
    monkeypatch.setattr(case_io, "its_room", lambda device: one_case)
    load_inputs(path, "cpu", alone=True)
    assert parked == []
    load_inputs(path, "cpu")  # the split share: parked
    assert len(parked) == 1
    monkeypatch.setattr(case_io, "its_room", lambda device: one_case - 1)
    load_inputs(path, "cpu", alone=True)
    assert len(parked) == 2
    monkeypatch.undo()
    monkeypatch.setattr(case_io, "free_bytes", lambda device: 4 * 2**30)
    assert case_io.its_room("cuda") == 2 * 2**30 and case_io.its_room("cpu") == float("inf")
