import subprocess
import sys
import types

import pytest
import torch

from mtmc.tasks import Task
from mtmc.verify.case_io import default_backend_flags as _default_backend_flags
from mtmc.verify.case_io import run_forward as _forward
from mtmc.verify.child import _host_copy, _state_changes, _state_pair, reference, untimed_outputs
from mtmc.verify.correctness import REFERENCE_NOISE_FLAG, compare_case, tolerance_for


def test_host_copy_of_a_cpu_tensor_is_detached_from_it():
    out = torch.arange(7.0)
    copy = _host_copy(out)
    out.add_(100)  # the candidate keeps its tensor and changes it after returning it
    assert copy.data_ptr() != out.data_ptr()
    assert torch.equal(copy, torch.arange(7.0))


@pytest.mark.gpu
def test_host_copy_of_a_gpu_tensor_is_one_cpu_copy():
    out = torch.arange(7.0, device="cuda")
    copy = _host_copy(out)
    out.add_(100)
    assert copy.device.type == "cpu" and torch.equal(copy, torch.arange(7.0))


def test_the_untimed_calls_never_hold_the_timing_sets_the_timed_buffers_are_restored_from():
    sets = [[torch.arange(6.0), 3], [torch.ones(6), 3]]
    pristine = [s[0].clone() for s in sets]

    def stash(inputs):  # computes its answer, then leaves it in its input for the timed calls to copy
        out = inputs[0] * inputs[1]
        inputs[0].copy_(out)
        return [out]

    own = untimed_outputs(stash, sets, "cpu")
    assert all(torch.equal(s[0], p) for s, p in zip(sets, pristine, strict=True))
    assert torch.equal(own[0][0], pristine[0] * 3) and torch.equal(own[1][0], pristine[1] * 3)


# ---------------------------------------------------------------------------------------------------
# state kept between calls (S10/S11): one model, two seeds of the same sizes


def cases(*sizes_per_case):
    return [{"sizes": sizes, "model_seed": 0, "init_inputs": [], "inputs": [torch.randn(4, 3)]}
            for sizes in sizes_per_case]


def candidate_module(model_class, **globals_):
    return types.SimpleNamespace(ModelNew=model_class, **globals_)


def test_a_cache_in_the_modules_globals_is_a_state_change():
    store = []

    class Caching(torch.nn.Module):
        def forward(self, x):
            store.append(x.clone())  # a module-level list of every input seen
            return x * 2

    module = candidate_module(Caching, STORE=store)
    changes = _state_changes(module, cases({"n": 4}, {"n": 4}), "cpu", _forward)
    assert changes == ["STORE[1]"]


def test_tensors_kept_on_the_model_may_be_made_once_but_not_depend_on_the_inputs():
    class LazyConstant(torch.nn.Module):
        def forward(self, x):
            if not hasattr(self, "scale"):
                self.scale = torch.full((3,), 2.0)  # input-independent: fine
            return x * self.scale

    class LastInput(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("last", torch.zeros(4, 3))

        def forward(self, x):
            self.last.copy_(x)  # what it keeps depends on the inputs
            return x * 2

    assert _state_changes(candidate_module(LazyConstant), cases({"n": 4}, {"n": 4}), "cpu", _forward) == []
    last = _state_changes(candidate_module(LastInput), cases({"n": 4}, {"n": 4}), "cpu", _forward)
    assert last == ["self.last"]
    # one case of each size: no second seed to compare with
    assert _state_changes(candidate_module(LastInput), cases({"n": 4}, {"n": 5}), "cpu", _forward) == []
    # the large-case plan's order (trusted.py): one seed at the declared size, then the small size's
    large_plan = cases({"n": 4}, {"n": 5}, {"n": 3}, {"n": 3})
    assert _state_changes(candidate_module(LastInput), large_plan, "cpu", _forward) == ["self.last"]


class _BufferCache(torch.nn.Module):
    """A result cache in a buffer made once: the last input's rows, written on every call. How it
    keeps the buffer is each test's: `keep` stores it, `reach` gets it back."""

    def keep(self, buf):
        raise NotImplementedError

    def reach(self):
        raise NotImplementedError

    def forward(self, x):
        if not hasattr(self, "made"):
            self.made = True
            self.keep(torch.zeros(2, 4, 3))  # [0]: the cache, [1]: never written
        self.reach()[0].copy_(x)
        return x * 2


def test_a_cache_kept_as_an_untyped_storage_is_a_state_change():
    class Storage(_BufferCache):
        def keep(self, buf):
            self.store = buf.untyped_storage()  # no tensor kept: the walk saw none before 2.11

        def reach(self):
            return torch.empty(0).set_(self.store).view(2, 4, 3)

    changes = _state_changes(candidate_module(Storage), cases({"n": 4}, {"n": 4}), "cpu", _forward)
    assert changes == ["self.store"]


def test_a_cache_reached_through_a_constant_view_of_its_buffer_is_a_state_change():
    class View(_BufferCache):
        def keep(self, buf):
            self.anchor = buf[1, 0, :1]  # one element that never changes: all the digest saw before 2.11

        def reach(self):
            return torch.as_strided(self.anchor, (2, 4, 3), (12, 3, 1), 0)  # glue, statically allowed

    changes = _state_changes(candidate_module(View), cases({"n": 4}, {"n": 4}), "cpu", _forward)
    assert changes == ["self.anchor"]


def test_a_cache_kept_in_pythons_own_holders_is_a_state_change():
    import functools
    import itertools

    class Partial(_BufferCache):
        def keep(self, buf):
            self.get = functools.partial(lambda b: b, buf)

        def reach(self):
            return self.get()

    class Repeat(_BufferCache):
        def keep(self, buf):
            self.buffers = itertools.repeat(buf)

        def reach(self):
            return next(self.buffers)

    class BoundMethod(_BufferCache):
        def keep(self, buf):
            self.cache_of = buf.view_as  # a bound builtin method: its tensor

        def reach(self):
            return self.cache_of(torch.empty(2, 4, 3))

    for model, path in ((Partial, "self.get.<2>[0]"), (Repeat, "self.buffers.<0>"),
                        (BoundMethod, "self.cache_of.<self>")):
        changes = _state_changes(candidate_module(model), cases({"n": 4}, {"n": 4}), "cpu", _forward)
        assert changes == [path], model.__name__


def test_a_kept_memory_address_is_reported_though_it_never_changes():
    class Address(_BufferCache):
        def keep(self, buf):
            self.buf, self.address = buf, buf.data_ptr()  # a kernel can take the int and cast it back

        def reach(self):
            return self.buf

    changes = _state_changes(candidate_module(Address), cases({"n": 4}, {"n": 4}), "cpu", _forward)
    assert changes == ["self.buf", "self.address (a raw memory address)"]

    class Sizes(torch.nn.Module):  # honest numbers: sizes, element counts, 64-bit hash constants
        def forward(self, x):
            self.numel, self.big, self.mix = x.numel(), 2**36 * 3, 0x9E3779B97F4A7C15
            return x * 2

    assert _state_changes(candidate_module(Sizes), cases({"n": 4}, {"n": 4}), "cpu", _forward) == []


def test_the_state_check_takes_two_seeds_of_the_first_size_that_has_them():
    full = cases({"n": 4}, {"n": 4}, {"n": 4}, {"n": 5})
    assert _state_pair(full) == full[:2]  # the full plan: the declared size, as before the large-case plan
    large = cases({"n": 4}, {"n": 5}, {"n": 3}, {"n": 3}, {"n": 3})
    assert _state_pair(large) == large[2:4]
    assert _state_pair(cases({"n": 4}, {"n": 5})) == []


# ---------------------------------------------------------------------------------------------------
# the call schedule: every repeat on the same model must return the first call's outputs


class ThirdCallCheats(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x.clone() if self.calls < 3 else x.clone().fill_(0.5)


def test_a_repeat_that_differs_is_reported():
    from mtmc.verify import child, proof

    schedule_cases = [{**c, "out_meta": [[[4, 3], "torch.float32"]]} for c in cases({"n": 4}, {"n": 5})]
    counter = proof.LaunchCounter("candidate.py")  # not installed: no launches to count here
    allowed = frozenset({"clone", "fill_"})
    module = candidate_module(ThirdCallCheats)
    honest = child._run_schedule(module, schedule_cases, [1, 0, 1, 0], "cpu", counter, allowed)
    assert [r["deterministic"] for r in honest] == [True, True]
    caught = child._run_schedule(module, schedule_cases, [1, 0, 1, 0, 1], "cpu", counter, allowed)
    assert [r["deterministic"] for r in caught] == [True, False]
    assert torch.equal(caught[1]["second_outputs"][0], torch.full((4, 3), 0.5))
    assert [len(r["launches"]) for r in caught] == [2, 3]



class RewritesItsFirstOutput(torch.nn.Module):
    """Its first call returns twice the input, which it keeps; each repeat returns a cheap constant and
    writes it into that first output too (its own tensor: the harness compared repeats with it)."""

    def forward(self, x):
        if "first" not in vars(self):
            self.first = x * 2
            return self.first
        self.first.fill_(0.5)
        return x.clone().fill_(0.5)


def test_a_repeat_that_rewrites_the_first_calls_outputs_still_differs_from_them():
    from mtmc.verify import child, proof

    schedule_cases = [{**c, "out_meta": [[[4, 3], "torch.float32"]]} for c in cases({"n": 4})]
    counter = proof.LaunchCounter("candidate.py")  # not installed: no launches to count here
    reports = child._run_schedule(candidate_module(RewritesItsFirstOutput), schedule_cases, [0, 0], "cpu",
                                  counter, frozenset({"mul", "clone", "fill_"}))
    assert reports[0]["deterministic"] is False  # by the digest taken right after the first call (S22)
    assert torch.equal(reports[0]["outputs"][0], 2 * schedule_cases[0]["inputs"][0])  # copied at once
    assert torch.equal(reports[0]["second_outputs"][0], torch.full((4, 3), 0.5))


def test_a_cache_that_copies_its_new_state_into_the_state_checks_snapshot_is_still_seen():
    """The state check's view of what the model keeps after its first call waits through the second
    call; a kernel could reach a clone kept there by its address (here: through the harness's frame)."""

    class Caching(torch.nn.Module):
        def forward(self, x):
            if "last" in vars(self):
                self.last.copy_(x)
                frame = sys._getframe(1)
                while frame is not None and frame.f_code.co_name != "_state_changes":
                    frame = frame.f_back
                for kept in frame.f_locals["before"].values():
                    if isinstance(kept, torch.Tensor):
                        kept.copy_(x)  # the snapshot made to agree with the new state
            else:
                self.last = x.clone()
            return x * 2

    changes = _state_changes(candidate_module(Caching), cases({"n": 4}, {"n": 4}), "cpu", _forward)
    assert changes == ["self.last"]


# ---------------------------------------------------------------------------------------------------
# the reference says whether it convolves: eager runs convolutions on TF32 (correctness.eager_precision)

REFERENCE_SOURCE = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(3, 4, 3))

    def forward(self, x):
        return {body}


def get_inputs():
    return [torch.randn(2, 3, 9)]


def get_init_inputs():
    return []
'''


@pytest.mark.parametrize("body, convolves", [
    ("torch.relu(nn.functional.conv1d(x, self.weight.transpose(0, 1)))", True),
    ("nn.functional.conv_transpose1d(x, self.weight, stride=2)", True),
    ("x.transpose(1, 2) @ self.weight[:, :, 0]", False),
])
def test_the_reference_reports_whether_it_computes_a_convolution(body, convolves, tmp_path):
    task = Task(name="ref_ops", source=REFERENCE_SOURCE.format(body=body))
    cases = [{"sizes": {}, "model_seed": 0, "input_seed": 1}, {"sizes": {}, "model_seed": 1, "input_seed": 2}]
    result = reference(task.name, task.source, cases, "cpu", str(tmp_path / "inputs.pt"), None)
    assert result["eager_tf32"] is convolves
    assert len(result["expected"]) == 2


def test_baselines_are_timed_with_pytorchs_default_backend_flags():
    """Eager and torch.compile run as a user's code does: cuDNN convolutions on TF32, matmuls
    strict. The flags child.baseline sets are PyTorch's own defaults (a fresh interpreter's)."""
    fresh = subprocess.run([sys.executable, "-c", "import torch; b = torch.backends; "
                            "print(b.cudnn.allow_tf32, b.cuda.matmul.allow_tf32)"],
                           capture_output=True, text=True, check=True).stdout.split()
    assert fresh == ["True", "False"]
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    try:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = False, True
        assert _default_backend_flags() == {"cudnn.allow_tf32": True, "cuda.matmul.allow_tf32": False}
        assert torch.backends.cudnn.allow_tf32 and not torch.backends.cuda.matmul.allow_tf32
    finally:
        torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


# ---------------------------------------------------------------------------------------------------
# the float64 floor (correctness.reference_error): the reference job measures the fp32 reference's own
# error against the same forward in float64, per case and output

NOISE_SOURCE = '''
import torch
import torch.nn as nn

batch_size, channels, depth, size = 3, 2, 5, 6


class Model(nn.Module):
    """KernelBench level-2 #23 in small: a GroupNorm's mean is 0, the fp32 reference's is noise."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv3d(channels, 8, 3)
        self.norm = nn.GroupNorm(4, 8)

    def forward(self, x):
        return self.norm(self.conv(x)).mean(dim=[1, 2, 3, 4])


def get_inputs():
    return [torch.randn(batch_size, channels, depth, size, size)]


def get_init_inputs():
    return []
'''


def _other_rounding(model, x):
    """The noise task computed as a correct candidate might: fp32 throughout, GroupNorm by hand, the
    mean summed in another order."""
    y = model.conv(x)
    groups = y.reshape(y.shape[0], 4, -1)
    mean = groups.sum(-1, keepdim=True) / groups.shape[-1]
    var = ((groups - mean) ** 2).sum(-1, keepdim=True) / groups.shape[-1]
    normed = ((groups - mean) / torch.sqrt(var + 1e-5)).reshape(y.shape[0], -1)
    return normed.flip(-1).sum(-1) / normed.shape[-1]


def _got(out):
    return {"type_errors": [], "kind": "single", "outputs": [out], "devices": ["cpu"], "mutated_inputs": []}


def _reference_of(source, tmp_path, seeds=2):
    task = Task(name="floor", source=source)
    cases = [{"sizes": {}, "model_seed": i, "input_seed": 10 + i} for i in range(seeds)]
    return task, cases, reference(task.name, task.source, cases, "cpu", str(tmp_path / "inputs.pt"), None)


def test_a_noise_output_gets_the_floor_and_a_correct_candidate_passes_with_the_flag(tmp_path):
    """Rejected before the floor: its rounding noise is not the reference's. Zeros (the true answer)
    pass too; garbage larger than the noise still fails."""
    task, cases, result = _reference_of(NOISE_SOURCE, tmp_path)
    for case, expected in zip(cases, result["expected"], strict=True):
        # the reference is as far from the truth as from 0 (to rounding: the CPU's kernels vary by ISA)
        assert expected["reference_errors"] == [pytest.approx(1.0, rel=1e-6)]
        model = task.make_model(case["model_seed"], case["sizes"])
        [x] = task.make_inputs(case["input_seed"], case["sizes"])
        with torch.no_grad():
            out = _other_rounding(model, x)
        got = _got(out)
        before = compare_case({**expected, "reference_errors": [0.0]}, got, {}, "cpu", "c")
        assert not before.ok
        after = compare_case(expected, got, {}, "cpu", "c")
        assert after.ok, after.message
        assert REFERENCE_NOISE_FLAG in after.flags
        zeros = compare_case(expected, {**got, "outputs": [torch.zeros_like(out)]}, {}, "cpu", "c")
        assert zeros.ok and REFERENCE_NOISE_FLAG in zeros.flags
        for garbage in (out * 100, torch.randn_like(out), torch.full_like(out, 1e-3)):
            assert not compare_case(expected, {**got, "outputs": [garbage]}, {}, "cpu", "c").ok


@pytest.mark.parametrize("body", [
    "torch.relu(nn.functional.conv1d(x, self.weight.transpose(0, 1)))",
    "x.transpose(1, 2) @ self.weight[:, :, 0]",
    "torch.softmax(x * 3, dim=-1)",
])
def test_an_ordinary_task_gets_a_floor_far_below_its_tolerance_and_a_wrong_candidate_fails(body, tmp_path):
    _, _, result = _reference_of(REFERENCE_SOURCE.format(body=body), tmp_path)
    for expected in result["expected"]:
        [floor] = expected["reference_errors"]
        assert 0 < floor < 1e-6
        assert tolerance_for(torch.float32, {}, 0.0, floor) == tolerance_for(torch.float32, {})
        [ref] = expected["outputs"]
        got = _got(ref * (1 + 1e-3))
        assert not compare_case(expected, got, {}, "cpu", "c").ok
        honest = compare_case(expected, {**got, "outputs": [ref * (1 + 1e-6)]}, {}, "cpu", "c")
        assert honest.ok and REFERENCE_NOISE_FLAG not in honest.flags


def test_a_forward_that_draws_random_numbers_gets_no_floor(tmp_path):
    """Its float64 twin draws other numbers: the floor would measure the randomness, not rounding."""
    source = REFERENCE_SOURCE.format(body="x + 1e-3 * torch.randn_like(x) + self.weight.sum()")
    _, _, result = _reference_of(source, tmp_path)
    assert [e["reference_errors"] for e in result["expected"]] == [[0.0], [0.0]]


def test_the_profile_counts_a_kernel_first_launched_inside_it_as_the_candidates_own(monkeypatch):
    """S23's path: a call on an input object seen before launches a Triton kernel the cases never ran.
    The profile reads the launch tally after its calls, so that kernel is the candidate's own (what the
    call returned is the timed-output recheck's to judge), not 'foreign compute' (CUDA faked on the CPU)."""
    from mtmc.verify import child
    from mtmc.verify.output_seals import OutputSeals
    from mtmc.verify.pristine import NO_AUDIT
    from mtmc.verify.scrub import Scrubbed

    tally = {"softmax_kernel": 4}  # the launch counter's tally after the cases
    seen_by_profile = {}

    class Forward:
        counter = types.SimpleNamespace(streams=set(), kernels=tally)

        def __call__(self, model, inputs):
            tally["copy_kernel"] = tally.get("copy_kernel", 0) + 1  # launched only on a repeated input
            return [inputs[0]]

    def fake_profile(first, names):
        first()
        seen_by_profile["names"] = set(names)  # what the share is matched against, after the calls
        return {}

    monkeypatch.setattr(torch.cuda, "current_stream", lambda: types.SimpleNamespace(cuda_stream=0))
    monkeypatch.setattr(child, "candidate_model", lambda module, case, device: None)
    monkeypatch.setattr(child, "timing_sets", lambda data, device: [[torch.ones(3)]])
    monkeypatch.setattr(child, "fresh_copy", lambda inputs, device: [t.clone() for t in inputs])
    monkeypatch.setattr(child.proof, "triton_share", fake_profile)
    data = {"cases": [{}], "timing": {"case": 0, "sets": [0]}}
    child._gpu_measurements({}, None, data, Forward(), False, {}, True, child.PhaseClock(), None, None,
                            Scrubbed(NO_AUDIT, lambda: None), OutputSeals(0))
    assert seen_by_profile["names"] == {"softmax_kernel", "copy_kernel"}
