"""TreeEnv: the optimize loop over a tree file (menu, gate, retries, budget, return), and episodes
that end where the real graph with the replay verifier ends."""

from __future__ import annotations

import math

import pytest

from coders.template import TemplateCoder
from mtmc.budgets import Budgets
from mtmc.optimize import run_optimize
from mtmc.strategies import PORT, STOP, Strategy
from mtmc.tree import ReplayVerifier, load_tree, record_tree
from mtmc.tree.env import TreeEnv, run_episode
from planners.greedy import GreedyPlanner
from planners.heuristic import HeuristicPlanner
from planners.random import RandomPlanner
from tests.tree.fakes import DigestVerifier, branching_rows, tiny_task, write_rows

S = Strategy.parse


def synthetic(tmp_path):
    return load_tree(write_rows(tmp_path / "t.jsonl", branching_rows()))


def env_of(tmp_path, **kwargs):
    return TreeEnv(synthetic(tmp_path), [tiny_task("t")], **kwargs)


def test_the_menu_is_the_coders_in_its_order_and_stop_once_ported(tmp_path):
    env = env_of(tmp_path)
    assert env.reset("t").legal == [PORT] and env.legal() == [PORT]
    env.step(PORT)
    assert env.legal() == [S("num_warps 8"), S("vectorize"), S("autotune"), S("num_warps 2"), STOP]
    assert env.plan_state().program is not None and env.plan_state().verdict.candidate_ms == 2.0


def test_the_gate_retries_failures_rejects_slower_steps_and_accepts_faster_ones(tmp_path):
    env = env_of(tmp_path, call_cost=0.1, max_steps=10)
    env.reset("t")
    port = env.step(PORT)
    assert (port.outcome, port.calls, port.reward) == ("accepted", 1, pytest.approx(-0.1))
    wrong = env.step(S("vectorize"))  # incorrect: judged again on the retry, as the graph does
    assert (wrong.outcome, wrong.calls, wrong.verdict.status) == ("rejected", 2, "incorrect")
    refused = env.step(S("autotune"))  # the coder refused: a compile error that cost no call
    assert (refused.outcome, refused.calls, refused.verdict.status) == ("rejected", 0, "compile_error")
    slower = env.step(S("num_warps 2"))
    assert (slower.outcome, slower.calls) == ("rejected", 1)
    faster = env.step(S("num_warps 8"))
    assert faster.outcome == "accepted" and faster.reward == pytest.approx(math.log(2.0) - 0.1)
    assert env.legal() == [S("num_warps 2"), S("tile BLOCK=1024"), STOP]
    last = env.step(S("tile BLOCK=1024"))
    assert last.done and env.legal() == [STOP]  # D was not expanded: a leaf
    episode = env.episode()
    assert (episode.final, episode.final_ms, episode.port_ms, episode.calls) == ("D", 0.5, 2.0, 6)
    assert episode.stop_reason == "nothing_legal" and episode.speedup == pytest.approx(4.0)
    assert episode.return_ == pytest.approx(math.log(4.0) - 0.1 * 6)
    assert [r.accepted for r in env.history] == [True, False, False, False, True, True]


def test_budget_stop_and_illegal_steps(tmp_path):
    env = env_of(tmp_path, max_steps=2)
    env.reset("t")
    env.step(PORT)
    with pytest.raises(ValueError, match="not among the legal steps"):
        env.step(S("tile BLOCK=1024"))  # legal only after num_warps 8
    assert env.step(S("num_warps 2")).done and env.episode().stop_reason == "max_steps"
    with pytest.raises(RuntimeError, match="reset"):
        env.step(STOP)
    env.reset("t")
    env.step(PORT)
    assert env.step(STOP).done and env.episode().stop_reason == "planner_stop"
    assert env.episode().speedup == pytest.approx(1.0)


PLANNERS = [HeuristicPlanner(), GreedyPlanner(), RandomPlanner(seed=3, stop_prob=0.05)]


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    path = tmp_path_factory.mktemp("tree") / "t.jsonl"
    record_tree([tiny_task()], TemplateCoder(), DigestVerifier(), path, depth=3)
    return path


@pytest.mark.parametrize("planner", PLANNERS, ids=lambda p: type(p).__name__)
def test_an_episode_ends_where_the_graph_with_the_replay_verifier_ends(tmp_path, recorded, planner):
    task, path = tiny_task(), recorded
    env = TreeEnv(load_tree(path), [task], max_steps=3, max_retries=1)
    episode = run_episode(env, planner, task.name)
    with ReplayVerifier(tree=path) as replay:
        live = run_optimize(task, planner, TemplateCoder(), replay, tmp_path / "run",
                            budgets=Budgets(max_steps=3, max_retries=1, time_limit_s=None))
    judged = [r for r in live.trajectory if r["digest"] is not None]
    assert episode.final == live.program.digest and episode.final_ms == live.verdict.candidate_ms
    assert (episode.calls, episode.steps, episode.stop_reason) == (len(judged), len(live.history),
                                                                     live.stop_reason)
    assert [r.strategy for r in env.history] == [r["strategy"] for r in live.history]
    assert replay.unrecorded == {}


def test_a_menu_handed_out_is_the_callers_own_copy(tmp_path):
    # menus are read once per program: a planner that edits the list it was given must not change them
    env = env_of(tmp_path)
    env.reset("t")
    env.step(PORT)
    env.legal().clear()
    env.plan_state().legal.append(S("num_warps 16"))
    assert env.legal() == [S("num_warps 8"), S("vectorize"), S("autotune"), S("num_warps 2"), STOP]
