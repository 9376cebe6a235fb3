"""The inputs each candidate call receives, checked against the reference's (mtmc/verify/pristine.py):
the keyed checksum itself, the candidate job's record of it, and the main process's judgement. The
corpus's s21_* files run the same through the whole verifier."""

import pytest
import torch

from mtmc.tasks import Task
from mtmc.verify import child, pristine, proof
from mtmc.verify.case_io import load_inputs, run_forward
from mtmc.verify.pristine import CallInputs, InputCheck, mutated_inputs, received_problem

KEY = 20261201


def test_copies_agree_and_any_change_shows():
    check = InputCheck(KEY)
    x = torch.randn(5, 301)
    assert check.values([x, 3]) == check.values([x.clone(), 3])
    for change in (lambda t: t[2, 7].neg_(), lambda t: t[0, :2].copy_(t[0, :2].flip(0)),
                   lambda t: t.view(torch.int32)[4, 9].add_(1)):  # a sign, two words swapped, one ulp
        changed = x.clone()
        change(changed)
        assert check.tensor(changed) != check.tensor(x)
    assert InputCheck(KEY + 1).tensor(x) != check.tensor(x)  # another key, other weights


def test_a_change_compensated_where_a_plain_or_periodic_sum_misses_it_shows():
    """+d at a word of one chunk, -d at the same word of the next: every fixed-weight sum, and one whose
    weights repeat with the chunk, stays the same; the keyed sums do not (the chunks differ)."""
    check = InputCheck(KEY)
    words = torch.randint(-1000, 1000, (3 * pristine.WORDS + 5,), dtype=torch.int16)
    changed = words.clone()
    changed[17] += 7
    changed[pristine.WORDS + 17] -= 7
    assert int(changed.sum()) == int(words.sum())
    assert check.tensor(changed) != check.tensor(words)
    within = words.clone()  # and inside one chunk, where the weights tell the words apart
    within[3] += 5
    within[4] -= 5
    assert check.tensor(within) != check.tensor(words)


def test_the_value_is_the_same_whatever_the_layout():
    check = InputCheck(KEY)
    x = torch.randn(6, 9)
    assert check.tensor(x.t()) == check.tensor(x.t().contiguous())
    odd = torch.arange(12, dtype=torch.uint8)[1:]  # a byte slice at an odd offset, an odd byte count
    assert check.tensor(odd) == check.tensor(odd.clone())
    assert check.tensor(torch.empty(0)) == [[0], "torch.float32", 0]
    assert check.values([[1, 2]]) != check.values([[1, 3]])  # a Python list handed over as it is


def test_received_and_left_inputs_are_judged_against_the_reference():
    expected = [[["a"], ["b"]], [["c"]]]
    seen = {"received": {0: [expected[0]], 1: [expected[1]]},
            "returned": {0: [expected[0]], 1: [expected[1]]}}
    assert received_problem(expected, seen) == ""
    seen["received"][1].append([["changed"]])
    assert "case 1: a call received inputs other than the reference's" in received_problem(expected, seen)
    assert "no input checks for case(s) [1]" in received_problem(expected, {**seen, "received": {0: []}})
    assert "no input checks" in received_problem(expected, None)
    assert mutated_inputs(expected[0], [expected[0], [["a"], ["x"]]]) == [1]
    assert mutated_inputs(expected[0], [[["a"]]]) == [0, 1]  # another count of inputs: all of them


# ---------------------------------------------------------------------------------------------------
# the candidate job's record: a pristine copy changed between calls shows at the next call that reads it


def _cases(n=2):
    return [{"sizes": {}, "model_seed": 0, "init_inputs": [], "inputs": [torch.randn(4, 3)],
             "out_meta": [[[4, 3], "torch.float32"]]} for _ in range(n)]


def _module(model_class):
    return type("Candidate", (), {"ModelNew": model_class})


class Corrupts(torch.nn.Module):
    """Its first call writes zeros over the harness's pristine copy of case 0 (a test reaches it
    directly, as a kernel writing outside its buffers or Python through the harness's frames would)."""

    pristine: torch.Tensor

    def forward(self, x):
        Corrupts.pristine.zero_()
        return x.clone()


def test_a_pristine_case_changed_between_calls_shows_in_the_next_call_of_it():
    cases = _cases()
    expected = [InputCheck(KEY).values(c["inputs"]) for c in cases]
    Corrupts.pristine = cases[0]["inputs"][0]
    audit = CallInputs(KEY, cases)
    counter = proof.LaunchCounter("candidate.py")  # not installed: no launches to count here
    child._run_schedule(_module(Corrupts), cases, [0, 1, 0], "cpu", counter, frozenset({"clone", "zero_"}),
                        audit)
    assert "case 0: a call received inputs other than" in received_problem(expected, audit.report())
    assert audit.report()["received"][1] == [expected[1]]  # case 1's copy was never touched


def test_the_state_checks_second_seed_is_checked_too():
    cases = _cases()
    expected = [InputCheck(KEY).values(c["inputs"]) for c in cases]

    class SameInputTwice(torch.nn.Module):
        def forward(self, x):
            cases[1]["inputs"][0].copy_(cases[0]["inputs"][0])  # a cache then sees one input twice
            return x.clone()

    audit = CallInputs(KEY, cases)
    audit.returned = {0: [expected[0]], 1: [expected[1]]}  # the checked calls' part, not run here
    assert child._state_changes(_module(SameInputTwice), cases, "cpu", run_forward, audit) == []
    assert "case 1: a call received inputs other than" in received_problem(expected, audit.report())


def test_untimed_calls_check_each_copy_they_hand_over():
    sets = [[torch.arange(6.0)], [torch.ones(6)]]
    seen = []
    child.untimed_outputs(lambda inputs: [inputs[0] * 2], sets, "cpu",
                          lambda k, inputs: seen.append(k) or inputs)
    assert seen == [0, 1]


def test_the_reference_job_checks_the_inputs_every_candidate_regenerates(tmp_path):
    source = ("import torch\nimport torch.nn as nn\n\nclass Model(nn.Module):\n    def forward(self, x, n):\n"
              "        return x * n\n\ndef get_inputs():\n    return [torch.randn(3, 5), 2]\n\n"
              "def get_init_inputs():\n    return []\n")
    task = Task(name="scale", source=source)
    cases = [{"sizes": {}, "model_seed": i, "input_seed": 7 + i} for i in range(2)]
    path = str(tmp_path / "inputs.pt")
    result = child.reference(task.name, task.source, cases, "cpu", path, None, check_key=KEY)
    regenerated = load_inputs(path, "cpu")["cases"]
    assert result["input_checks"] == [InputCheck(KEY).values(c["inputs"]) for c in regenerated]
    assert result["input_checks"][0] != result["input_checks"][1]  # two seeds


@pytest.mark.gpu
def test_every_timed_call_sees_its_buffers_checked_after_they_are_loaded():
    from mtmc.verify.timing import TimingOptions, time_calls

    sets = [[torch.randn(64, device="cuda")], [torch.randn(64, device="cuda")]]
    loads = []
    own = [[2 * s[0]] for s in sets]
    time_calls({"c": lambda inputs: [2 * inputs[0]]}, sets, {"c": own}, True, TimingOptions(max_reps=10),
               loaded=lambda k, buffers: loads.append((k, torch.equal(buffers[0], sets[k][0]))))
    assert len(loads) >= 10 and all(same for _, same in loads) and {k for k, _ in loads} == {0, 1}


def test_the_weights_are_the_keys_cryptographic_stream_not_torchs_generator():
    """Verifier 2.11: MT19937's state, so every weight, follows from ~1,250 of its outputs; SHAKE-256's
    stream gives nothing of the rest away."""
    import hashlib

    key = 12345
    weights = pristine.InputCheck(key)._weights
    stream = hashlib.shake_256(f"mtmc-input-check-weights:{key}".encode()).digest(8)
    first = [int.from_bytes(stream[i:i + 2], "little") for i in range(0, 8, 2)]
    assert weights.dtype == torch.int32 and weights.shape == (2, pristine.WORDS)
    assert weights[0, :4].tolist() == first
    assert int(weights.min()) >= 0 and int(weights.max()) < 2**16
    mt = torch.randint(0, 2**16, (2, pristine.WORDS), generator=torch.Generator().manual_seed(key),
                       dtype=torch.int32)
    assert not torch.equal(weights, mt)


@pytest.mark.parametrize("length", [1, 1023, 1024, 5000, pristine.WORDS])
def test_the_two_stage_sums_are_the_plain_sums(length):
    rows = torch.randint(-2**15, 2**15, (3, 1, length), dtype=torch.int16)
    weights = pristine.InputCheck(7)._weights
    buffer = torch.empty(3 * 2 * length, dtype=torch.int32)
    plain = (rows.to(torch.int64) * weights[:, :length]).sum(dim=2).reshape(-1)
    assert torch.equal(pristine._weighted(rows, weights, buffer), plain)
