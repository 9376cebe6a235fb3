"""Heuristic, random and scripted planners: legal steps only, port first, stopping, reproducibility.

    pytest tests/planners/test_baselines.py
"""

from __future__ import annotations

import pytest

from mtmc.program import Program
from mtmc.protocols import PlanState, StepRecord
from mtmc.strategies import PORT, STOP, Strategy
from mtmc.tasks import Task, TaskSummary
from mtmc.tasks.summary import TensorInfo
from mtmc.verify.verdict import TF32_BEYOND_EAGER, Status, Verdict
from planners.heuristic import HeuristicPlanner, closest, stalled
from planners.random import RandomPlanner
from tests.scripted_planner import ScriptedPlanner

TASK = Task(name="t", source="")
PROGRAM = Program("class ModelNew: ...")
TUNING = ["fuse epilogue", "tile BLOCK_M=64 BLOCK_N=64 BLOCK_K=32", "tile BLOCK_M=128 BLOCK_N=128 BLOCK_K=64",
          "tile BLOCK_M=128 BLOCK_N=256 BLOCK_K=64",
          "tile BLOCK=256", "tile BLOCK=4096", "group_m 8", "num_stages 2", "num_stages 3", "num_stages 4",
          "num_warps 4", "num_warps 8", "split_k 4", "vectorize", "autotune", "persistent", "precision tf32",
          "precision tf32x3", "stop"]


def summary(*, matmul: bool, out_shape=(4096, 4096), dtype="float32", in_shape=(4096, 4096),
            op="mm") -> TaskSummary:
    if matmul:  # 4096^3 GEMM: 137 GFLOP over 201 MB, ~680 FLOP/B
        flops, bytes_min = 2 * 4096**3, 3 * 4096 * 4096 * 4
        return TaskSummary("mm", {op: 1}, [TensorInfo([4096, 4096], dtype)] * 2,
                           [TensorInfo(list(out_shape), dtype)], 0, flops, flops, bytes_min)
    numel = 4096 * 4096  # softmax-like: a few FLOP per element
    return TaskSummary("sm", {"softmax": 1}, [TensorInfo(list(in_shape), dtype)],
                       [TensorInfo(list(out_shape), dtype)], 0, 5 * numel, 0, 2 * numel * 4)


def state(legal, *, program=PROGRAM, history=(), matmul=False, steps_left=10, **kw) -> PlanState:
    return PlanState(task=TASK, summary=summary(matmul=matmul, **kw), program=program, verdict=None,
                     legal=[Strategy.parse(s) for s in legal], history=list(history), steps_left=steps_left)


def record(i, strategy, accepted=True, speedup=None) -> StepRecord:
    return StepRecord(i, strategy, "ok" if accepted else "incorrect", accepted, speedup, 0.0)


def play(planner, legal, *, matmul, **kw) -> list[str]:
    """Let a planner run until it stops, every step accepted; the legal set stays fixed except that
    a fusion, once applied, is no longer offered (as with the template coder: no pair left)."""
    history = [record(0, "port")]
    legal = list(legal)
    while True:
        step = planner.propose(state(legal, history=history, matmul=matmul, **kw))
        if step.is_stop or len(history) > 20:
            return [r.strategy for r in history[1:]]
        assert step in [Strategy.parse(s) for s in legal]
        history.append(record(len(history), str(step)))
        if step.kind == "fuse":
            legal.remove(str(step))


# ---------------------------------------------------------------------------------------------------
# heuristic


def test_heuristic_ports_first():
    assert HeuristicPlanner().propose(state(["library conv2d", "port"], program=None)) == PORT
    library = Strategy.parse("library conv2d")
    assert HeuristicPlanner().propose(state(["library conv2d"], program=None)) == library


def test_heuristic_tunes_a_matmul_like_a_gemm():
    steps = play(HeuristicPlanner(), TUNING, matmul=True)
    assert steps == ["fuse epilogue", "precision tf32x3", "autotune", "persistent", "group_m 8",
                     "tile BLOCK_M=128 BLOCK_N=128 BLOCK_K=64", "num_stages 3",
                     "num_warps 8"]  # many output tiles: no split-K


def test_heuristic_keeps_the_tf32_of_an_fp32_convolution():
    steps = play(HeuristicPlanner(), TUNING, matmul=True, op="convolution")
    assert not any(s.startswith("precision") for s in steps)  # tf32 already, as cuDNN's default
    assert steps[:2] == ["fuse epilogue", "autotune"]


def test_heuristic_wants_an_fp32_exact_precision_after_a_tf32_beyond_eager_rejection():
    """The verifier refused a step for TF32 where eager computed in fp32 (Verdict.reason): tf32x3
    next, before the conv's usual list; ieee where tf32x3 is not offered; nothing without the reason."""
    refused = StepRecord(1, "fuse epilogue", "incorrect", False, None, 0.0, reason=TF32_BEYOND_EAGER)
    history = [record(0, "port"), refused]
    conv = {"matmul": True, "op": "convolution"}

    def proposed(legal, history):
        return str(HeuristicPlanner().propose(state(legal, history=history, **conv)))

    assert proposed(TUNING, history) == "precision tf32x3"
    assert proposed([t for t in TUNING if t != "precision tf32x3"] + ["precision ieee"], history) == \
        "precision ieee"
    plain = [record(0, "port"), record(1, "fuse epilogue", accepted=False)]
    assert proposed(TUNING, plain) == "autotune"  # the conv's list as before


def test_heuristic_never_picks_a_reduced_precision_for_fp32_accuracy():
    legal = [t for t in TUNING if t != "precision tf32x3"]  # only plain tf32 offered
    assert "precision tf32" not in play(HeuristicPlanner(), legal, matmul=True)


def test_heuristic_wants_the_large_tile_for_16_bit_matmuls():
    steps = play(HeuristicPlanner(), TUNING, matmul=True, dtype="bfloat16")
    assert steps[:5] == ["fuse epilogue", "autotune", "persistent", "group_m 8",
                         "tile BLOCK_M=128 BLOCK_N=256 BLOCK_K=64"]
    assert not any(s.startswith("precision") for s in steps)  # 16-bit dots have no precision step


def test_heuristic_uses_split_k_and_four_stages_when_they_fit():
    steps = play(HeuristicPlanner(), TUNING, matmul=True, out_shape=(256, 256), dtype="float16")
    assert "num_stages 4" in steps and "split_k 4" in steps


def test_heuristic_splits_a_long_reduction():
    long_k = TaskSummary("mm", {"mm": 1}, [TensorInfo([2048, 131072], "float16")] * 2,
                         [TensorInfo([2048, 2048], "float16")], 0, 2 * 2048 * 2048 * 131072,
                         2 * 2048 * 2048 * 131072, 2 * 2048 * 131072 * 2 + 2048 * 2048 * 2)
    planner = HeuristicPlanner()
    assert planner.is_matmul_heavy(long_k) and planner.wants_split_k(long_k)
    assert not planner.wants_split_k(summary(matmul=True))  # square 4096^3: 1024 tiles, K = side


def test_heuristic_passes_over_precision_on_a_tf32x3_port():
    """The template ports fp32 matmuls at tf32x3: its menu holds `precision ieee` (a change) but no
    `precision tf32x3` (none): the heuristic goes on to autotune, and never to ieee."""
    legal = [t for t in TUNING if t != "precision tf32x3"] + ["precision ieee"]
    steps = play(HeuristicPlanner(), legal, matmul=True)
    assert steps[:2] == ["fuse epilogue", "autotune"]
    assert not any(s.startswith("precision") for s in steps)


def test_heuristic_wants_the_ports_split_for_few_tiles_and_a_neighbour_where_the_port_split():
    """KernelBench level-1 6_ (256 x 256 fp32 out, K = 524288): 16 tiles of 64x64, 32 slices make
    two programs per SM; the port split 32 already, so its menu offers the others: 16 is nearest."""
    k = 524288
    few = TaskSummary("mm", {"mm": 1}, [TensorInfo([256, k], "float32"), TensorInfo([k, 256], "float32")],
                      [TensorInfo([256, 256], "float32")], 0, 2 * 256 * 256 * k, 2 * 256 * 256 * k,
                      2 * 256 * k * 4 + 256 * 256 * 4)
    planner = HeuristicPlanner()
    assert planner.wants_split_k(few) and planner.split_value(few) == 32
    legal = [f"split_k {s}" for s in (1, 2, 4, 8, 16, 64)] + ["autotune", "stop"]
    history = [record(0, "port")]
    step = planner.propose(PlanState(task=TASK, summary=few, program=PROGRAM, verdict=None,
                                     legal=[Strategy.parse(s) for s in legal], history=history,
                                     steps_left=10))
    assert str(step) == "split_k 16"
    assert planner.split_value(summary(matmul=True, out_shape=(2048, 2048))) == 4  # 1024 tiles


def test_heuristic_tunes_a_memory_bound_task_for_bandwidth():
    # the template coder offers a reduction split only to a kernel with too few programs: none here
    steps = play(HeuristicPlanner(), [s for s in TUNING if not s.startswith("split_k")], matmul=False)
    assert steps == ["fuse epilogue", "vectorize", "tile BLOCK=4096", "num_warps 8", "autotune"]
    # a large input reduced to a small output still streams 64 MB: 8 warps (mean_dim0 on the H200)
    assert "num_warps 8" in play(HeuristicPlanner(), TUNING, matmul=False, out_shape=(64, 64))
    small = play(HeuristicPlanner(), TUNING, matmul=False, out_shape=(64, 64), in_shape=(64, 64))
    assert "num_warps 4" in small


def test_heuristic_splits_a_reduction_with_too_few_programs_after_fusing():
    # mean_dim0's menu after its port: the coder offers split_k 4/16/64 (256 programs on 132 SMs)
    legal = ["fuse epilogue", "tile BLOCK_M=64 BLOCK_N=64", "num_warps 2", "num_warps 8", "split_k 4",
             "split_k 16", "split_k 64", "autotune", "stop"]
    steps = play(HeuristicPlanner(), legal, matmul=False)
    assert steps[:2] == ["fuse epilogue", "split_k 16"]
    assert play(HeuristicPlanner(reduce_split=4), legal, matmul=False)[1] == "split_k 4"


def test_heuristic_repeats_an_accepted_fusion_while_the_coder_offers_it():
    legal = ["fuse epilogue", "vectorize", "stop"]
    once = [record(0, "port", speedup=1.2), record(1, "fuse epilogue", speedup=1.7)]
    assert HeuristicPlanner().propose(state(legal, history=once)) == Strategy.parse("fuse epilogue")
    no_pair_left = state(["vectorize", "stop"], history=once)
    assert HeuristicPlanner().propose(no_pair_left) == Strategy.parse("vectorize")


@pytest.mark.parametrize("matmul", [True, False])
@pytest.mark.parametrize("chain", ["fuse attention", "fuse softmax"])
def test_heuristic_fuses_a_whole_score_chain_before_pairs(chain, matmul):
    legal = ["fuse epilogue", "fuse prologue", chain, "autotune", "stop"]
    assert play(HeuristicPlanner(), legal, matmul=matmul)[:3] == [chain, "fuse epilogue", "fuse prologue"]


@pytest.mark.parametrize("matmul", [True, False])
def test_heuristic_fuses_every_pair_at_once_before_pair_by_pair(matmul):
    legal = ["fuse epilogue", "fuse prologue", "fuse all", "autotune", "stop"]
    assert play(HeuristicPlanner(), legal, matmul=matmul)[0] == "fuse all"
    slower = [record(0, "port", speedup=1.2), record(1, "fuse all", accepted=False)]
    assert HeuristicPlanner().propose(state(legal, history=slower)) == Strategy.parse("fuse epilogue")


def test_heuristic_retries_a_failed_fusion_once_another_fusion_changed_the_kernels():
    legal = ["fuse epilogue", "vectorize", "tile BLOCK=4096", "stop"]
    rejected_first = [record(0, "port", speedup=2.2), record(1, "fuse epilogue", accepted=False)]
    assert HeuristicPlanner().propose(state(legal, history=rejected_first)) == Strategy.parse("vectorize")
    then_prologue = rejected_first + [record(2, "fuse prologue", speedup=4.0)]
    assert HeuristicPlanner().propose(state(legal, history=then_prologue)) == Strategy.parse("fuse epilogue")
    tuned_only = rejected_first + [record(2, "vectorize", speedup=2.5)]  # not a fusion: no retry
    assert HeuristicPlanner().propose(state(legal, history=tuned_only)) == Strategy.parse("tile BLOCK=4096")


def test_heuristic_only_proposes_legal_steps():
    for legal in (["stop"], ["num_warps 4", "stop"], ["precision tf32", "stop"], TUNING):
        step = HeuristicPlanner().propose(state(legal, matmul=True))
        assert step.is_stop or step in [Strategy.parse(s) for s in legal]


def test_heuristic_stops_when_nothing_is_legal_or_nothing_helped_twice():
    assert HeuristicPlanner().propose(state(["stop"])) == STOP
    assert HeuristicPlanner().propose(state([], program=None)) == STOP
    failed_twice = [record(0, "port"), record(1, "vectorize", False), record(2, "autotune", False)]
    assert HeuristicPlanner().propose(state(TUNING, history=failed_twice)) == STOP
    once = failed_twice[:2]
    assert HeuristicPlanner().propose(state(TUNING, history=once)) != STOP


@pytest.mark.parametrize("roofline_ms, stops", [(0.99, True), (1.2, True), (0.9, False), (None, False)])
def test_heuristic_stops_at_the_roofline_floor(roofline_ms, stops):
    verdict = Verdict(Status.OK, candidate_ms=1.0, roofline_ms=roofline_ms)
    at = state(TUNING, history=[record(0, "port")])
    at.verdict = verdict
    assert HeuristicPlanner().propose(at).is_stop is stops
    at.verdict = None  # the CPU interpreter times nothing: no floor to stop at
    assert not HeuristicPlanner().propose(at).is_stop


def test_stalled_counts_accepted_steps_without_a_better_speedup_as_no_help():
    assert not stalled([record(0, "port", speedup=1.0), record(1, "a", speedup=1.5)], 2)
    assert stalled([record(0, "port", speedup=1.5), record(1, "a", speedup=1.4), record(2, "b", False)], 2)
    recovered = [record(0, "port", speedup=1.5), record(1, "a", False), record(2, "b", speedup=1.6)]
    assert not stalled(recovered, 2)


def test_closest_matches_parameters_by_log_distance():
    offered = [Strategy.parse(s) for s in ("num_warps 2", "num_warps 16", "tile BLOCK=512")]
    assert closest("num_warps", {"value": 8}, offered) == Strategy.parse("num_warps 16")
    assert closest("group_m", {"value": 8}, offered) is None


# ---------------------------------------------------------------------------------------------------
# random


def test_random_is_seeded_and_reproducible():
    legal = TUNING
    runs = [play(RandomPlanner(seed=3, stop_prob=0.05), legal, matmul=False) for _ in range(2)]
    assert runs[0] == runs[1]
    others = {tuple(play(RandomPlanner(seed=s, stop_prob=0.05), legal, matmul=False)) for s in range(8)}
    assert len(others) > 1


def test_random_proposes_only_legal_steps_and_can_stop():
    legal = [Strategy.parse(s) for s in TUNING]
    picks = [RandomPlanner(seed=s, stop_prob=0.2).propose(state(TUNING)) for s in range(200)]
    assert all(p in legal for p in picks)
    assert STOP in picks and len(set(picks)) > 5
    assert RandomPlanner(stop_prob=0.0).propose(state(["port"], program=None)) == PORT


def test_random_stops_when_the_budget_or_the_moves_run_out():
    assert RandomPlanner(stop_prob=0.0).propose(state(TUNING, steps_left=0)) == STOP
    assert RandomPlanner(stop_prob=0.0).propose(state(["stop"])) == STOP
    with pytest.raises(ValueError):
        RandomPlanner(stop_prob=1.5)


# ---------------------------------------------------------------------------------------------------
# scripted


def test_scripted_replays_one_entry_per_step_then_stops():
    planner = ScriptedPlanner(["port", "num_warps 8"])
    assert planner.propose(state(["port"], program=None)) == PORT
    assert planner.propose(state(TUNING, history=[record(0, "port")])) == Strategy.parse("num_warps 8")
    assert planner.propose(state(TUNING, history=[record(0, "port"), record(1, "x")])) == STOP


def test_scripted_rejects_a_typo_at_construction():
    with pytest.raises(ValueError):
        ScriptedPlanner(["port", "tiel BLOCK=4"])
