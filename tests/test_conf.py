"""Every config composes, and every `_target_` accepts its arguments (without building anything)."""

import inspect
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra.utils import get_object
from omegaconf import OmegaConf

from mtmc.cli import CONF_DIR, JOBS, _register_resolvers

GROUPS = {group: sorted(p.stem for p in (Path(CONF_DIR) / group).glob("*.yaml"))
          for group in ("planner", "coder", "verifier")}


def composed(job: str, overrides: list[str]):
    _register_resolvers()
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose(config_name=job, overrides=overrides, return_hydra_config=True)


def assert_target_binds(node) -> None:
    kwargs = OmegaConf.to_container(node, resolve=True)
    target = get_object(kwargs.pop("_target_"))
    inspect.signature(target).bind(**kwargs)


@pytest.mark.parametrize("job", JOBS)
def test_every_job_config_composes(job):
    overrides = {"verify": ["task=softmax_lastdim", "candidate=x.py"], "optimize": ["task=softmax_lastdim"]}
    cfg = composed(job, overrides.get(job, []))
    assert cfg.job == job


@pytest.mark.parametrize("group, option", [(g, o) for g, options in GROUPS.items() for o in options])
def test_every_group_option_binds_its_target(group, option):
    cfg = composed("optimize", ["task=softmax_lastdim", f"{group}={option}"])
    assert_target_binds(cfg[group])


def test_reward_config_binds():
    assert_target_binds(composed("optimize", ["task=softmax_lastdim"]).reward)


def test_run_folder_is_named_after_the_task_file():
    cfg = composed("optimize", ["task=/some/where/my_op.py"])
    assert cfg.hydra.run.dir.startswith("runs/my_op/")
    resumed = composed("optimize", ["task=softmax_lastdim", "resume=runs/x/1"])
    assert resumed.hydra.run.dir == "runs/x/1"


@pytest.mark.parametrize("launcher, target", [
    ("mtmc_slurm", "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"),
    ("mtmc_ray", "hydra_plugins.hydra_ray_launcher.ray_launcher.RayLauncher")])
def test_cluster_launchers_compose_without_their_plugins(launcher, target):
    """What `mtmc bench -m hydra/launcher=<launcher> ... --cfg job` composes; launching needs the plugin."""
    cfg = composed("bench", ["suite=builtin:eval", "verifier=ray", f"hydra/launcher={launcher}"])
    assert cfg.hydra.launcher._target_ == target
    assert cfg.verifier._target_ == "mtmc.verify.ray_backend.RayVerifier"
    if launcher == "mtmc_slurm":
        assert cfg.hydra.launcher.submitit_folder.endswith("/.submitit/%j")  # resolves in a sweep dir
    else:
        assert cfg.hydra.launcher.ray.remote.num_gpus == 0  # the GPUs are the verifier actors'
