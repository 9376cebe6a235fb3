"""The tree follows the graph's retries: a step the verifier refused for tf32_beyond_eager is retried with
its verdict as the coder's feedback (the fp32-exact twin, coders/template/exact_fp32.py), and the twin
is recorded, expanded, checked, rebuilt and replayed; the reason is in the file and in TreeEnv's
history; a format 1 file (no reasons, no retries) still reads. The CPU interpreter has no TF32, so the
refusal comes from a fake verifier (fakes.Tf32Verifier)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from coders.template import TemplateCoder
from mtmc.budgets import Budgets
from mtmc.lm_policy import state_prompt
from mtmc.optimize import run_optimize
from mtmc.strategies import PORT, Strategy
from mtmc.tree import ReplayVerifier, load_tree, read_rows, record_tree, verdict_of
from mtmc.tree.attempts import recorded_verdicts
from mtmc.tree.check import check_tree
from mtmc.tree.env import TreeEnv, run_episode
from mtmc.tree.recorder import Recorder
from mtmc.tree.retime import rebuild, strategy_path
from mtmc.verify.verdict import TF32_BEYOND_EAGER, Status, Verdict
from planners.greedy import GreedyPlanner
from planners.heuristic import HeuristicPlanner
from planners.random import RandomPlanner
from tests.coders.test_template_exact_fp32 import runs_task
from tests.scripted_planner import ScriptedPlanner
from tests.tree.fakes import Tf32Verifier, branching_rows, tiny_task, write_rows

coder = TemplateCoder()
TASK = runs_task(8)  # a conv the port runs on TF32 dots; its fp32-exact twin keeps the runs loop at tf32x3
NAME = TASK.name
REFUSED = Verdict(Status.INCORRECT, "refused", reason=TF32_BEYOND_EAGER)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    path = tmp_path_factory.mktemp("tf32") / "t.jsonl"
    return path, record_tree([TASK], coder, Tf32Verifier(), path, depth=2)


def twins() -> tuple[str, str]:
    return coder.apply(TASK, None, PORT).digest, coder.apply(TASK, None, PORT, REFUSED).digest


def test_a_refused_port_is_retried_and_the_tree_grows_below_its_fp32_exact_twin(recorded):
    path, summary = recorded
    port, exact = twins()
    tree = load_tree(path)
    first, twin = tree.node(NAME, port), tree.node(NAME, exact)
    assert (first["attempt"], first["status"], first["reason"]) == (0, "incorrect", TF32_BEYOND_EAGER)
    assert (twin["parent"], twin["strategy"], twin["attempt"], twin["depth"]) == (None, "port", 1, 0)
    assert twin["status"] == "ok" and twin["reason"] == "" and tree.port(NAME) == twin
    assert tree.is_expanded(NAME, exact) and not tree.is_expanded(NAME, port)  # the loop goes on from it
    assert [r for r in tree.task_nodes(NAME) if r["parent"] == exact]
    assert max(r["depth"] for r in tree.task_nodes(NAME)) == 2 and summary.complete and summary.retried == 1
    # `precision tf32` brings the TF32 back: refused, and the coder refuses its retry, as in a live run
    again = tree.retry(NAME, exact, "precision tf32", 1)
    assert again.digest is None and "`precision tf32` is what the verifier refused" in again.error


def test_without_retries_the_refused_port_is_a_leaf(tmp_path):
    path = tmp_path / "t.jsonl"
    summary = record_tree([TASK], coder, Tf32Verifier(), path, depth=2, max_retries=0)
    rows = list(read_rows(path))
    assert [(r["kind"], r["status"], r["reason"]) for r in rows] == [("node", "incorrect", TF32_BEYOND_EAGER)]
    assert summary.complete and summary.retried == 0


def without_settings(path) -> Counter:
    return Counter(json.dumps({k: v for k, v in r.items() if k != "verifier_settings"}, sort_keys=True)
                   for r in read_rows(path))


def test_a_run_cut_before_the_retry_resumes_to_the_same_tree_and_a_rerun_adds_nothing(tmp_path, recorded):
    full, _ = recorded
    cut, verifier = tmp_path / "cut.jsonl", Tf32Verifier()
    # the clock counts verdicts: the limit falls after the port's, before its retry is judged
    recorder = Recorder(coder, verifier, cut, depth=2, time_limit_s=1, clock=lambda: len(verifier.calls))
    summary = recorder.run([TASK])
    assert not summary.complete and [r["attempt"] for r in read_rows(cut)] == [0]
    assert record_tree([TASK], coder, Tf32Verifier(), cut, depth=2).complete
    assert without_settings(cut) == without_settings(full)
    again = Tf32Verifier()
    before = cut.read_text()
    assert record_tree([TASK], coder, again, cut, depth=2).complete
    assert again.calls == [] and cut.read_text() == before


class DeafCoder(TemplateCoder):
    """The template coder as it was before it acted on a verdict: feedback is ignored."""

    def apply(self, task, program, strategy, feedback=None):
        return super().apply(task, program, strategy)


def test_check_passes_the_recorded_verdict_as_feedback(recorded):
    tree = load_tree(recorded[0])
    assert check_tree(tree, [TASK], coder)["share"] == 1.0
    # without the retry, or deaf to it, only the refused port is written again: nothing below the twin
    assert check_tree(tree, [TASK], coder, max_retries=0)["produced"] == 1
    assert check_tree(tree, [TASK], DeafCoder())["produced"] == 1


def test_retime_rebuilds_a_program_below_the_twin_with_the_recorded_feedback(recorded):
    tree = load_tree(recorded[0])
    deep = next(r for r in tree.task_nodes(NAME) if r["depth"] == 2 and r["status"] == "ok")
    path = strategy_path(tree, NAME, deep)
    assert path[0] == ("port", 1) and len(path) == 3
    assert rebuild(coder, TASK, path, recorded_verdicts(tree, NAME)).digest == deep["digest"]
    assert rebuild(coder, TASK, path) is None  # no verdict to feed back: the port is not retried


def test_the_environment_takes_the_recorded_retry_and_its_history_carries_the_reason(recorded):
    port, exact = twins()
    tree = load_tree(recorded[0])
    env = TreeEnv(tree, [TASK], max_retries=1)
    env.reset(NAME)
    step = env.step(PORT)
    assert (step.outcome, step.calls, step.verdict.reason) == ("accepted", 2, "")
    assert env.episode().final == exact and env.history[-1].reason == ""
    tf32 = env.step(Strategy.parse("precision tf32"))  # refused for TF32, then the coder refuses the retry
    assert (tf32.outcome, tf32.calls, tf32.verdict.status) == ("rejected", 1, "compile_error")
    once = TreeEnv(tree, [TASK], max_retries=0)
    once.reset(NAME)
    assert once.step(PORT).outcome == "rejected" and once.episode().final is None
    assert once.plan_state().history[-1].reason == TF32_BEYOND_EAGER  # what the heuristic planner reads


PLANNERS = [HeuristicPlanner(), GreedyPlanner(), RandomPlanner(seed=5, stop_prob=0.05)]


@pytest.mark.parametrize("planner", PLANNERS, ids=lambda p: type(p).__name__)
def test_an_episode_is_the_live_loop_on_the_gpu_and_on_the_replayed_tree(tmp_path, recorded, planner):
    path = recorded[0]
    env = TreeEnv(load_tree(path), [TASK], max_steps=3, max_retries=1)
    episode = run_episode(env, planner, NAME)
    budgets = Budgets(max_steps=3, max_retries=1, time_limit_s=None)
    replay = ReplayVerifier(tree=path)
    for name, verifier in (("gpu", Tf32Verifier()), ("replay", replay)):
        live = run_optimize(TASK, planner, coder, verifier, tmp_path / name, budgets=budgets)
        judged = [r for r in live.trajectory if r["digest"] is not None]
        assert episode.final == live.program.digest and live.trajectory[0]["outcome"] == "retry"
        assert (episode.calls, episode.steps, episode.stop_reason) == (len(judged), len(live.history),
                                                                         live.stop_reason)
        assert [(r.strategy, r.accepted, r.reason) for r in env.history] == \
            [(r["strategy"], r["accepted"], r["reason"]) for r in live.history]
    assert replay.unrecorded == {}


class Shown(ScriptedPlanner):
    """A scripted planner that keeps the LM planner's prompt of every state it is shown."""

    def __init__(self, steps):
        super().__init__(steps)
        self.prompts: list[str] = []

    def propose(self, state):
        self.prompts.append(state_prompt(state))
        return super().propose(state)


def test_the_environment_shows_the_lm_planner_the_live_loops_prompt_with_the_refusals_reason(tmp_path,
                                                                                            recorded):
    # no retry: the refused port stays in the history, with its reason, and is tried again
    env, offline = TreeEnv(load_tree(recorded[0]), [TASK], max_steps=2, max_retries=0), Shown(["port"] * 2)
    run_episode(env, offline, NAME)
    live = Shown(["port"] * 2)
    run_optimize(TASK, live, coder, Tf32Verifier(), tmp_path / "run",
                 budgets=Budgets(max_steps=2, max_retries=0, time_limit_s=None))
    assert offline.prompts == live.prompts and len(live.prompts) == 2
    assert "step 0 port status incorrect rejected speedup - reason tf32_beyond_eager" in \
        live.prompts[1].splitlines()


def test_a_format_1_file_reads_with_empty_reasons_and_the_recorder_does_not_extend_it(tmp_path):
    rows = [{**row, "format": 1} for row in branching_rows()]  # no reason, no attempt: as format 1 wrote
    path = write_rows(tmp_path / "old.jsonl", rows)
    tree = load_tree(path)
    assert verdict_of(tree.node("t", "B")).reason == "" and tree.port("t")["digest"] == "P"
    env = TreeEnv(tree, [tiny_task("t")], max_retries=1)
    env.reset("t")
    env.step(PORT)
    wrong = env.step(Strategy.parse("vectorize"))  # no retry recorded: the same program judged again
    assert (wrong.outcome, wrong.calls) == ("rejected", 2) and env.history[-1].reason == ""
    with pytest.raises(ValueError, match="tree format 1 .*record a new file"):
        record_tree([tiny_task("t")], coder, Tf32Verifier(), path, depth=1)
    assert load_tree(path).nodes == tree.nodes  # nothing appended
