"""`resume=<run folder>` alone continues the run as started; overrides that would change it are refused."""

import pytest

from mtmc.cli import CONF_DIR
from mtmc.resume import resume_overrides


@pytest.fixture
def run(tmp_path):
    (tmp_path / ".hydra").mkdir()
    (tmp_path / ".hydra" / "overrides.yaml").write_text("- task=softmax_lastdim\n- verifier=interpreter\n")
    return tmp_path


def test_resume_alone_takes_the_runs_own_overrides(run):
    assert resume_overrides([f"resume={run}"], CONF_DIR) == [
        "task=softmax_lastdim", "verifier=interpreter", f"resume={run}"]


def test_retyping_the_run_or_extending_its_budget_is_fine(run):
    given = [f"resume={run}", "task=softmax_lastdim", "planner=heuristic", "max_steps=20"]
    assert resume_overrides(given, CONF_DIR) == ["verifier=interpreter", *given]


@pytest.mark.parametrize("override", ["planner=random", "task=layernorm", "max_retries=3",
                                      "planner.patience=5"])
def test_an_override_that_changes_the_run_is_refused(run, override):
    with pytest.raises(SystemExit) as info:
        resume_overrides([f"resume={run}", override], CONF_DIR)
    assert str(info.value) == (f"mtmc optimize: resume={run} continues its own run (task=softmax_lastdim "
                               f"verifier=interpreter), and {override} would change it: drop that, or start "
                               "a fresh run")


def test_without_resume_or_a_hydra_folder_the_overrides_stay_as_given(tmp_path):
    assert resume_overrides(["task=softmax_lastdim"], CONF_DIR) == ["task=softmax_lastdim"]
    assert resume_overrides([f"resume={tmp_path}", "task=x"], CONF_DIR) == [f"resume={tmp_path}", "task=x"]


def test_overrides_the_run_folder_holds_that_no_longer_compose_are_one_sentence(run):
    (run / ".hydra" / "overrides.yaml").write_text("- task=softmax_lastdim\n- planner=retired\n")
    with pytest.raises(SystemExit) as info:
        resume_overrides([f"resume={run}"], CONF_DIR)
    message = str(info.value)
    assert message.startswith(f"mtmc optimize: resume={run}: the run's own overrides (task=softmax_lastdim "
                              "planner=retired) no longer compose (")
    assert "planner/retired" in message and message.endswith("so it cannot be continued: start a fresh run")
    assert "\n" not in message


def test_an_override_given_now_that_does_not_compose_names_the_run_folder(run):
    with pytest.raises(SystemExit) as info:
        resume_overrides([f"resume={run}", "max_stepz=3"], CONF_DIR)
    assert str(info.value) == (f"mtmc optimize: resume={run}: Could not override 'max_stepz': "
                               "the config has no key 'max_stepz'")


def test_an_unknown_choice_given_now_lists_the_choices(run):
    with pytest.raises(SystemExit) as info:
        resume_overrides([f"resume={run}", "planner=randm"], CONF_DIR)
    assert str(info.value).startswith("mtmc optimize: planner=randm: no such planner; choose one of ")
