"""Every built-in task through the real verifier: the template coder's port and every legal next
step from it are accepted (CPU interpreter: several seeds, the task's CPU sizes, static rules,
proof of work). This is the coverage claim of the template coder, checked the way the pipeline
checks it."""

from __future__ import annotations

import pytest

from coders.template import TemplateCoder
from mtmc.protocols import CoderError
from mtmc.strategies import PORT, Strategy
from mtmc.tasks import builtin_names, load_task
from mtmc.verify import InterpreterVerifier

coder = TemplateCoder()


@pytest.fixture(scope="module")
def verifier():
    # two seeds at each of a task's CPU sizes, plus the verifier's random repeats: about 600 verdicts in
    # this file, the largest share of the suite's time on two cores
    with InterpreterVerifier(timeout_s=180.0, seeds=2) as v:
        yield v


def test_the_template_coder_ports_at_least_80_percent_of_the_suite():
    ported = []
    for name in builtin_names():
        try:
            coder.apply(load_task(name), None, PORT)
            ported.append(name)
        except CoderError:
            pass
    assert len(ported) >= 0.8 * len(builtin_names())


# knobs whose values change only constants of one emitter path: the slow run verifies every value
CONSTANT_KNOBS = ("tile", "num_warps", "num_stages", "group_m")


def structural_steps(steps: list[Strategy]) -> list[Strategy]:
    """Every step that changes the program's structure (fuse, precision, library, split_k,
    persistent, vectorize, autotune): each goes through its own emitter path. The constant knobs
    (tiles, warps, stages, GROUP_M) only change numbers in the port's path; the port's own values
    are verified here, every other value under `-m slow`."""
    return [s for s in steps if s.kind not in CONSTANT_KNOBS]


def check_port_and_steps(name: str, verifier, sample) -> None:
    task = load_task(name)
    try:
        port = coder.apply(task, None, PORT)
    except CoderError as err:
        pytest.skip(f"not covered: {err}")
    rejected = []
    verdict = verifier.verify(task, port)
    if not verdict.ok:
        rejected.append(f"port: {verdict.status} {verdict.message[:300]}")
    steps = [s for s in coder.legal_strategies(task, port) if not s.is_stop]
    assert steps, "a ported program offers no step"
    for strategy in sample(steps):
        verdict = verifier.verify(task, coder.apply(task, port, strategy))
        if not verdict.ok:
            rejected.append(f"{strategy}: {verdict.status} {verdict.message[:300]}")
    assert not rejected, "\n".join(rejected)


# the six slowest on CI's CPU (19-52 s each, 3 minutes together): the slow run's every-step test covers them
SLOWEST = {"attention_causal_fp16", "bmm_softmax_fp16", "baddbmm_softmax", "conv_tanh_scale_fp16",
           "conv_bn_silu", "conv_relu_bias"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOWEST else n
                                  for n in builtin_names()])
def test_port_and_every_structural_step_are_accepted(name, verifier):
    # the default suite: 111 of the menu's 522 steps (this file was the largest share of CI's time)
    check_port_and_steps(name, verifier, structural_steps)


@pytest.mark.slow
@pytest.mark.parametrize("name", builtin_names())
def test_port_and_every_legal_step_are_accepted(name, verifier):
    check_port_and_steps(name, verifier, list)


@pytest.mark.parametrize("name, kernels", [("kl_div_rows", 1), ("rmsnorm_fp16", 1), ("add_rmsnorm_bf16", 1)])
def test_fusing_while_a_fusion_is_offered_stays_correct(name, kernels, verifier):
    """The heuristic planner repeats fusions while the coder offers them (planners/heuristic.py,
    `may_repeat`): the program at the end of that chain must still be right, and be few kernels."""
    task = load_task(name)
    program = coder.apply(task, None, PORT)
    applied = []
    while fusions := [s for s in coder.legal_strategies(task, program) if s.kind == "fuse"]:
        program = coder.apply(task, program, fusions[0])
        applied.append(str(fusions[0]))
        assert len(applied) < 10, applied
    verdict = verifier.verify(task, program)
    assert verdict.ok, f"{applied}: {verdict.status} {verdict.message[:300]}"
    assert program.source.count("@triton.jit") == kernels, applied
