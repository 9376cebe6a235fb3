"""Config mistakes found before a job starts, each as one sentence (mtmc/config_check.py)."""

import pytest
from omegaconf import OmegaConf

from mtmc.cli import CONF_DIR
from mtmc.config_check import check_overrides, check_values


@pytest.mark.parametrize("values, sentence", [
    ({"max_steps": 0}, "max_steps=0: must be a whole number, at least 1"),
    ({"max_steps": 2.5}, "max_steps=2.5: must be a whole number, at least 1"),
    ({"max_retries": -1}, "max_retries=-1: must be a whole number, at least 0"),
    ({"time_limit_s": 0}, "time_limit_s=0: must be a positive number of seconds, or null for no limit"),
    ({"eval": {"max_steps": -1}}, "eval.max_steps=-1: must be a whole number, at least 1"),
    ({"task": "???", "candidate": "???"}, "candidate, task not set: give candidate=<...> task=<...>"),
])
def test_bad_values_are_named(values, sentence):
    with pytest.raises(SystemExit) as info:
        check_values("job", OmegaConf.create(values))
    assert str(info.value) == f"mtmc job: {sentence}"


def test_good_values_pass():
    check_values("job", OmegaConf.create({"max_steps": 1, "max_retries": 0, "time_limit_s": None,
                                          "eval": {"time_limit_s": 0.5}}))


@pytest.mark.parametrize("overrides, sentence", [
    (["task=x", "max_stepz=3"], "Could not override 'max_stepz': the config has no key 'max_stepz'"),
    (["task=x", "verifier=gpu"],
     "verifier=gpu: no such verifier; choose one of auto, interpreter, local, ray, replay"),
    (["task=x", "verifier=replay"],
     "verifier=replay needs tree=<file> (a tree that mtmc tree record wrote)"),
    (["task=x", "max_retries=-2"], "max_retries=-2: must be a whole number, at least 0"),
])
def test_overrides_are_checked_as_hydra_composes_them(overrides, sentence):
    with pytest.raises(SystemExit) as info:
        check_overrides("optimize", overrides, CONF_DIR)
    assert str(info.value) == f"mtmc optimize: {sentence}"
    check_overrides("optimize", ["task=x", "max_steps=2"], CONF_DIR)  # and a good one passes
