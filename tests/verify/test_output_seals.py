"""Each candidate call's outputs, digested right after it and held to that digest wherever they are used
later (mtmc/verify/output_seals.py, S22): the record, its uses in the child (repeats, untimed outputs,
the state check) and the main process's judgement. The corpus's s22_* files run the same through the
whole verifier; test_child.py has the child's repeats and state check under attack."""

import sys

import pytest
import torch

from mtmc.verify import child
from mtmc.verify.output_seals import OutputSeals, output_key, outputs_problem
from mtmc.verify.pristine import InputCheck

KEY = 20261202


def test_the_outputs_have_a_key_of_their_own():
    assert output_key(KEY) not in (KEY, output_key(KEY + 1))
    x = torch.randn(5, 7)
    assert OutputSeals(KEY).digest([x]) != [InputCheck(KEY).tensor(x)]  # other weights than the inputs'
    assert OutputSeals(KEY).digest([x]) == [InputCheck(output_key(KEY)).tensor(x)]


def test_a_digest_is_of_exactly_tensors_only():
    class Lazy(torch.Tensor):  # its methods would be the candidate's code
        pass

    seals = OutputSeals(KEY)
    assert seals.digest([torch.ones(3).as_subclass(Lazy)]) is None
    assert seals.digest([torch.ones(3), torch.arange(2)]) == seals.digest([torch.ones(3), torch.arange(2)])
    assert seals.digest([torch.ones(3)]) != seals.digest([torch.ones(3).neg()])


def _result(seals, outputs, second=None, timing_outputs=None):
    return {"cases": [{"type_errors": [], "outputs": outputs, "second_outputs": second}],
            "timing_outputs": timing_outputs, "outputs_seen": seals.report()}


def test_an_output_changed_after_its_call_is_refused_by_the_main_process():
    seals = OutputSeals(KEY)
    returned = [torch.randn(4, 3)]
    seals.first(0, seals.digest(returned))
    host = [returned[0].clone()]  # the host copy made right after the call
    assert outputs_problem(KEY, _result(seals, host), None) == ""
    host[0][1, 2] += 1  # a later call wrote into it
    assert "case 0: its outputs that came back are not those its call returned" in \
        outputs_problem(KEY, _result(seals, host), None)
    assert "no output digests" in outputs_problem(KEY, {"cases": []}, None)


def test_a_repeat_that_travels_is_held_to_its_own_digest():
    seals = OutputSeals(KEY)
    first, second = [torch.zeros(3)], [torch.ones(3)]
    seals.first(0, seals.digest(first))
    seals.second(0, seals.digest(second))
    assert outputs_problem(KEY, _result(seals, first, [second[0].clone()]), None) == ""
    assert "the outputs of a repeat that differed" in \
        outputs_problem(KEY, _result(seals, first, [torch.full((3,), 2.0)]), None)


def test_untimed_outputs_are_digested_before_the_next_call_can_reach_them():
    """Set 1's call rewrites the harness's clone of set 0's output (reached here through the frame, as
    a kernel would through its address). Its digest was taken first: the main process refuses a copy of
    the changed output, and a timed call compared with it counts as tampering."""
    seals = OutputSeals(KEY)
    sets = [[torch.arange(6.0)], [torch.ones(6)]]

    def call(inputs):
        if bool(inputs[0][0] == 1):  # set 1
            sys._getframe(1).f_locals["own"][0][0].fill_(7.0)
        return [inputs[0] * 2]

    own = child.untimed_outputs(call, sets, "cpu", seen=seals.untimed_call)
    assert torch.equal(own[0][0], torch.full((6,), 7.0))
    seals.first(0, seals.digest([torch.ones(6)]))  # case 0 returned something else: set 0's output travels
    travelled = seals.unless_first(0, 0, own[0])
    assert "timing input set 0: its untimed outputs that came back are not those its call returned" in \
        outputs_problem(KEY, _result(seals, [torch.ones(6)], timing_outputs=[travelled]), [0])
    seals.hold(0, own[0])  # a timed call was compared with it
    seals.hold(1, own[1])  # and one with set 1's, unchanged
    assert seals.changed == 1
    assert "1 timed call(s) were compared with an untimed output that had changed" in \
        outputs_problem(KEY, _result(seals, [torch.ones(6)]), None)


def test_untimed_outputs_equal_to_their_case_do_not_travel():
    seals = OutputSeals(KEY)
    seals.first(0, seals.digest([torch.arange(3.0)]))
    seals.untimed_call(0, [torch.arange(3.0)])
    assert seals.unless_first(0, 0, [torch.arange(3.0)]) is None
    assert outputs_problem(KEY, _result(seals, [torch.arange(3.0)], timing_outputs=[None]), [0]) == ""
    seals.untimed_call(0, [torch.arange(3.0) + 1])  # another output: it travels, and None would not pass
    assert seals.unless_first(0, 0, [torch.arange(3.0) + 1]) is not None
    assert "timing input set 0" in outputs_problem(KEY, _result(seals, [torch.arange(3.0)],
                                                               timing_outputs=[None]), [0])


@pytest.mark.gpu
def test_every_timed_comparison_is_followed_by_the_held_check():
    from mtmc.verify.timing import TimingOptions, time_calls

    sets = [[torch.randn(64, device="cuda")], [torch.randn(64, device="cuda")]]
    own = [[2 * s[0]] for s in sets]
    seals = OutputSeals(KEY)
    for k, outputs in enumerate(own):
        seals.untimed_call(k, outputs)

    def answer_into_what_it_is_held_to(inputs):  # a cheap answer, copied over both untimed outputs
        out = torch.zeros_like(inputs[0])
        for outputs in own:
            outputs[0].copy_(out)
        return [out]

    held = []
    timing = time_calls({"candidate": answer_into_what_it_is_held_to}, sets, {"candidate": own}, True,
                        TimingOptions(max_reps=10), held=lambda k: held.append(k) or seals.hold(k, own[k]))
    assert timing["timings"]["candidate"]["mismatches"] == 0  # the comparison alone saw nothing
    assert len(held) >= 10 and set(held) == {0, 1} and seals.changed == len(held)
