"""The budgets and the reward: declared once (mtmc/budgets.py), composed into every job, checked in
one sentence."""

from pathlib import Path

import pytest
import yaml
from hydra import compose, initialize_config_dir
from hydra.utils import instantiate

from mtmc.budgets import RULES, Budgets
from mtmc.cli import CONF_DIR, _register_resolvers
from mtmc.config_check import check_overrides
from mtmc.reward import RewardConfig


def composed(job: str, overrides: list[str]):
    _register_resolvers()
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose(config_name=job, overrides=overrides)


@pytest.mark.parametrize("values, sentence", [
    ({"max_steps": 0}, "max_steps=0: must be a whole number, at least 1"),
    ({"max_retries": True}, "max_retries=True: must be a whole number, at least 0"),
    ({"time_limit_s": -5}, "time_limit_s=-5: must be a positive number of seconds, or null for no limit"),
])
def test_a_budget_out_of_range_is_one_sentence(values, sentence):
    with pytest.raises(ValueError) as info:
        Budgets(**values)
    assert str(info.value) == sentence


@pytest.mark.parametrize("job", ["optimize", "bench", "train"])
def test_no_job_config_declares_the_budgets_or_the_reward_itself(job):
    own = yaml.safe_load((Path(CONF_DIR) / f"{job}.yaml").read_text())
    assert not set(own) & {*RULES, "reward"}, f"conf/{job}.yaml declares what mtmc/budgets.py declares"


def test_every_job_gets_the_budgets_and_the_reward_from_one_place():
    optimize = composed("optimize", ["task=softmax_lastdim", "max_steps=3", "time_limit_s=null"])
    assert Budgets.from_config(optimize) == Budgets(max_steps=3, time_limit_s=None)
    assert Budgets.from_config(composed("bench", [])) == Budgets()
    train = composed("train", ["eval.max_retries=0"])
    assert Budgets.from_config(train.eval) == Budgets(max_steps=6, max_retries=0)
    for cfg in (optimize, train):
        assert instantiate(cfg.reward) == RewardConfig()


def test_the_reward_node_is_typed_and_closed():
    reward = composed("optimize", ["task=x", "reward.correct=0.5"]).reward
    assert instantiate(reward) == RewardConfig(correct=0.5)
    with pytest.raises(SystemExit, match="Key 'bonus' not in 'RewardConfig'"):
        check_overrides("optimize", ["task=x", "reward.bonus=1"], CONF_DIR)
    with pytest.raises(SystemExit, match="could not be converted to Float"):
        check_overrides("optimize", ["task=x", "reward.correct=lots"], CONF_DIR)
