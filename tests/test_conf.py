"""Every config composes, and every `_target_` accepts its arguments (without building anything)."""

import inspect
from pathlib import Path
from types import SimpleNamespace

import pytest
from hydra import compose, initialize_config_dir
from hydra.core.hydra_config import HydraConfig
from hydra.utils import get_object
from omegaconf import OmegaConf

import mtmc.jobs.bench
import mtmc.jobs.optimize
from mtmc.cli import CONF_DIR, JOBS, _register_resolvers, main

GROUPS = {group: sorted(p.stem for p in (Path(CONF_DIR) / group).glob("*.yaml"))
          for group in ("planner", "coder", "verifier")}


def composed(job: str, overrides: list[str]):
    _register_resolvers()
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose(config_name=job, overrides=overrides, return_hydra_config=True)


def assert_target_binds(node) -> None:
    """The node's `_target_` takes its arguments, and so do those of the nodes inside it (an LLM
    coder's `start` coder and `menu`)."""
    kwargs = OmegaConf.to_container(node, resolve=True) if not isinstance(node, dict) else dict(node)
    target = get_object(kwargs.pop("_target_"))
    inspect.signature(target).bind(**kwargs)
    for value in kwargs.values():
        if isinstance(value, dict) and "_target_" in value:
            assert_target_binds(value)


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


def test_an_experiment_sets_its_recipe_and_the_command_line_still_wins():
    cfg = composed("bench", ["experiment=kernelbench_l1"])
    assert (cfg.suite, cfg.max_steps, cfg.time_limit_s) == ("KernelBench/KernelBench/level1", 2, 150)
    assert cfg.verifier._target_ == "mtmc.verify.LocalVerifier"
    assert cfg.planner._target_ == "planners.heuristic.HeuristicPlanner"
    mine = composed("bench", ["experiment=kernelbench_l1", "suite=/data/kb/level1", "max_steps=4"])
    assert (mine.suite, mine.max_steps, mine.time_limit_s) == ("/data/kb/level1", 4, 150)
    smoke = composed("optimize", ["experiment=smoke"])
    assert (smoke.task, smoke.max_steps, smoke.max_retries) == ("softmax_lastdim", 2, 0)
    assert smoke.verifier._target_ == "mtmc.verify.InterpreterVerifier"


@pytest.mark.parametrize("job, module", [("optimize", mtmc.jobs.optimize), ("bench", mtmc.jobs.bench)])
def test_a_sweep_over_any_key_gives_each_job_its_own_folder(tmp_path, monkeypatch, job, module):
    """A real `-m` sweep through the console script, the job itself stubbed: before, every job of an
    optimize sweep over a key other than `task` got the task's folder, and the second was refused."""
    monkeypatch.chdir(tmp_path)
    folders = {}

    def record_folder(cfg):
        folders[cfg.max_steps] = HydraConfig.get().runtime.output_dir
        return SimpleNamespace(program="accepted")  # what the exit-code check reads

    monkeypatch.setattr(module, "run", record_folder)
    main([job, "-m", "task=softmax_lastdim" if job == "optimize" else "suite=builtin", "max_steps=2,4"])
    assert sorted(folders) == [2, 4] and folders[2] != folders[4]
    assert all(Path(folder).is_relative_to(tmp_path) for folder in folders.values())
