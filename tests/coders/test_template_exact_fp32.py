"""A retry refused for tf32_beyond_eager (eager computed an output in fp32 on that GPU): the template coder
makes every TF32 kernel fp32-exact (coders/template/exact_fp32.py), and the program still matches PyTorch
at fp32 tolerance on the CPU interpreter at small odd sizes; the optimize graph recovers a refused port
within its retry. The CPU has no TF32, so the refusal is a verdict built by hand (a fake verifier)."""

from __future__ import annotations

from pathlib import Path

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from coders.template import TemplateCoder
from coders.template.exact_fp32 import EXACT_FP32_FORM, exact_fp32_config, tf32_kernels
from coders.template.ir import ProgramIR
from mtmc.budgets import Budgets
from mtmc.graph import Context, build_graph, initial_state, run_config
from mtmc.program import Program
from mtmc.protocols import CoderError
from mtmc.strategies import PORT, Strategy
from mtmc.tasks import Task, load_task
from mtmc.verify.verdict import TF32_BEYOND_EAGER, Status, Verdict
from tests.coders.test_template import check
from tests.coders.test_template_conv import geometry_task
from tests.scripted_planner import ScriptedPlanner

TASKS = Path(__file__).parent / "tasks"
coder = TemplateCoder()
REFUSED = Verdict(Status.INCORRECT, "c, output 0: erred as TF32 does ...", reason=TF32_BEYOND_EAGER)
TF32_DOT = 'input_precision="tf32"'


def kernels(program: Program) -> list:
    return ProgramIR.from_dict(program.metadata["template_ir"]).kernels()


def runs_task(c_in: int = 5) -> Task:
    """A small conv the port gives the runs loop on TF32 dots (emit/conv_runs.py): level 1's few-channel
    shape (C_IN 5: a partial run) or level 2's 8-input-channel one (a full run)."""
    return geometry_task(2, 3, "padding=1", [{"B": 2, "C_IN": c_in, "C_OUT": 64, "S": 9},
                                             {"B": 1, "C_IN": c_in, "C_OUT": 67, "S": 7}])


def test_a_full_runs_loop_retries_at_tf32x3_and_matches_pytorch_at_fp32(tmp_path):
    task = runs_task(8)
    port = coder.apply(task, None, PORT)
    assert kernels(port)[0].config["k_loop"] == "runs" and TF32_DOT in port.source
    exact = coder.apply(task, None, PORT, REFUSED)
    config = kernels(exact)[0].config
    assert EXACT_FP32_FORM["runs_full"] == "tf32x3"
    assert config["k_loop"] == "runs" and config["runs_static"] and config["precision"] == "tf32x3"
    assert not config["tf32_round"] and 'input_precision="tf32x3"' in exact.source
    check(task, exact, tmp_path)


def test_a_partial_runs_loop_retries_as_the_fma_loop_and_matches_pytorch_at_fp32(tmp_path):
    task = runs_task()
    port = coder.apply(task, None, PORT)
    assert kernels(port)[0].config["k_loop"] == "runs" and TF32_DOT in port.source
    exact = coder.apply(task, None, PORT, REFUSED)
    config = kernels(exact)[0].config
    assert EXACT_FP32_FORM["runs"] == "fma" and config["k_loop"] == "fma" and config["precision"] == "ieee"
    assert not config["channels_last"] and not config["tf32_round"]
    assert (config["BLOCK_M"], config["BLOCK_N"]) == (128, 64)  # the probe's FMA tile
    assert TF32_DOT not in exact.source and "tl.dot" not in exact.source
    assert exact.metadata["exact_fp32"] and exact.metadata["template_steps"] == ["port"]
    check(task, exact, tmp_path)  # fp32 tolerance: no TF32 dot in the source


def test_a_wide_runs_conv_takes_the_probes_128_by_64_fma_tile():
    task = geometry_task(2, 3, "padding=1", [{"B": 1, "C_IN": 3, "C_OUT": 96, "S": 9}])
    ir = ProgramIR.from_dict(coder.apply(task, None, PORT).metadata["template_ir"])
    kernel = ir.kernels()[0]
    assert kernel.config["k_loop"] == "runs"
    config = exact_fp32_config(ir, kernel)
    tile = tuple(config[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages"))
    assert config["k_loop"] == "fma" and tile == (128, 64, 16, 4, 2)  # the 2026-11-27 probe's


@pytest.mark.parametrize("name, kind", [("conv/conv2d_bias_relu", "conv"),
                                        ("conv_transpose/conv_transpose_1d", "conv_transpose")])
def test_dot_loops_retry_at_tf32x3_unrounded_and_match_pytorch_at_fp32(name, kind, tmp_path):
    task = load_task(TASKS / f"{name}.py")
    port = coder.apply(task, None, PORT)
    assert [k.kind for k in tf32_kernels(ProgramIR.from_dict(port.metadata["template_ir"]))] == [kind]
    exact = coder.apply(task, None, PORT, REFUSED)
    [kernel] = [k for k in kernels(exact) if k.kind == kind]
    assert kernel.config["precision"] == "tf32x3" and not kernel.config.get("tf32_round")
    assert kernel.config.get("k_loop") == kernels(port)[0].config.get("k_loop")  # the loop kept
    assert TF32_DOT not in exact.source and 'input_precision="tf32x3"' in exact.source
    check(task, exact, tmp_path)


def test_a_fusion_step_retried_keeps_its_fusion_and_goes_fp32_exact(tmp_path):
    task = load_task(TASKS / "conv" / "conv2d_bias_relu.py")
    port = coder.apply(task, None, PORT)
    fuse = Strategy.parse("fuse epilogue")
    fused, exact = coder.apply(task, port, fuse), coder.apply(task, port, fuse, REFUSED)
    assert len(kernels(exact)) == len(kernels(fused)) < len(kernels(port))
    assert not tf32_kernels(ProgramIR.from_dict(exact.metadata["template_ir"]))
    assert exact.metadata["template_steps"] == ["port", "fuse epilogue"]
    check(task, exact, tmp_path)


def test_other_feedback_changes_nothing_and_nothing_to_make_exact_is_a_coder_error():
    task = runs_task()
    port = coder.apply(task, None, PORT)
    other = Verdict(Status.INCORRECT, "wrong values")
    assert coder.apply(task, None, PORT, other).source == port.source
    exact = coder.apply(task, None, PORT, REFUSED)
    with pytest.raises(CoderError, match="no TF32 kernel"):
        coder.apply(task, exact, Strategy.parse("autotune"), REFUSED)
    with pytest.raises(CoderError, match="`precision tf32` is what the verifier refused"):
        coder.apply(task, port, Strategy.parse("precision tf32"), REFUSED)


def test_the_menu_offers_the_fp32_exact_precisions_for_a_tf32_conv():
    legal = {str(s) for s in coder.legal_strategies(runs_task(), coder.apply(runs_task(), None, PORT))}
    assert {"precision ieee", "precision tf32x3"} <= legal


class RefusesTf32:
    """A fake GPU verifier: a program with a TF32 dot is refused as the real one refuses it where eager
    computed the conv in fp32 (reason tf32_beyond_eager); any other program is correct."""

    def __init__(self) -> None:
        self.seen: list[bool] = []

    def verify(self, task: Task, program: Program) -> Verdict:
        self.seen.append(TF32_DOT in program.source)
        return REFUSED if self.seen[-1] else Verdict(Status.OK, "correct", device="fake")


def test_the_graph_recovers_a_refused_port_within_its_retry(tmp_path):
    """port -> refused tf32_beyond_eager -> retry with the verdict as feedback -> fp32-exact -> judged."""
    task, verifier = runs_task(), RefusesTf32()
    budgets = Budgets(max_steps=2, max_retries=1, time_limit_s=None)
    context = Context(task=task, planner=ScriptedPlanner(["port"]), coder=coder, verifier=verifier,
                      budgets=budgets)
    graph = build_graph().compile(checkpointer=InMemorySaver())
    state = graph.invoke(initial_state(), run_config("exact", budgets), context=context)
    attempts = [(r["attempt"], r["outcome"], r["verdict"]["reason"]) for r in state["trajectory"]]
    assert attempts == [(0, "retry", TF32_BEYOND_EAGER), (1, "accepted", "")]
    assert verifier.seen == [True, False]
    program = Program.from_dict(state["program"])
    assert kernels(program)[0].config["k_loop"] == "fma"
    check(task, program, tmp_path)
