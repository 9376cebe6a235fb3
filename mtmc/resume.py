"""`mtmc optimize resume=<run folder>`: continue a run as it was started, whatever is retyped.

    resume_overrides(["resume=runs/softmax/1"], CONF_DIR)
    -> ["task=softmax_lastdim", "verifier=interpreter", "resume=runs/softmax/1"]

The run's own command-line overrides are in `<run folder>/.hydra/overrides.yaml` (Hydra writes it
for every run). They come first, so `resume=` alone is enough; an override given now that would
change the run's config (another task, planner, coder, ...) is refused, since the folder's
`config.yaml`, trajectory and checkpoint must describe one run. Only the budgets a run can be
extended by may change. Overrides that do not compose (the folder's own, or those given now) are one
sentence naming the folder: an unchecked merge could continue the run under another config.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra import compose, initialize_config_dir
from hydra.errors import HydraException
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

from mtmc.budgets import register_configs
from mtmc.config_check import check_group_choice, first_line

SAVED_OVERRIDES = Path(".hydra") / "overrides.yaml"
MAY_CHANGE = ("max_steps", "time_limit_s")  # a resumed run may be given more steps or time


def resume_overrides(overrides: Sequence[str], conf_dir: str) -> list[str]:
    """`overrides` with the resumed run's own in front; SystemExit with one sentence on a conflict.
    Without `resume=`, or for a folder Hydra did not write (no .hydra/), they are returned as given."""
    resume = next((o.partition("=")[2] for o in overrides if o.startswith("resume=")), None)
    saved_file = Path(resume or "") / SAVED_OVERRIDES
    if not resume or not saved_file.is_file():
        return list(overrides)
    own = [str(o) for o in OmegaConf.load(saved_file)
           if _key(o) != "resume" and not _key(o).startswith("hydra.")]
    given = {_key(o) for o in overrides}
    merged = [o for o in own if _key(o) not in given] + list(overrides)
    run = " ".join(own) or "the defaults"
    for override in overrides:  # `planner=foo`: the choices, not Hydra's search path
        check_group_choice("optimize", override, Path(conf_dir))
    was = _flat(conf_dir, own + [f"resume={resume}"], failure=f"resume={resume}: the run's own overrides "
                f"({run}) no longer compose ({{}}), so it cannot be continued: start a fresh run")
    now = _flat(conf_dir, merged, failure=f"resume={resume}: {{}}")
    changed = sorted(k for k in was.keys() | now.keys()
                     if was.get(k) != now.get(k) and k != "resume" and k not in MAY_CHANGE)
    if changed:
        raise SystemExit(f"mtmc optimize: resume={resume} continues its own run ({run}), and "
                         f"{_culprit(changed, overrides)} would change it: drop that, or start a fresh run")
    return merged


def _key(override: str) -> str:
    return str(override).partition("=")[0].lstrip("+~")


def _culprit(changed: list[str], overrides: Sequence[str]) -> str:
    # the override that changed the first differing key: `planner=random` rather than planner._target_
    for override in overrides:
        key = _key(override)
        if any(k == key or k.startswith(key + ".") for k in changed):
            return override
    return changed[0]


def _flat(conf_dir: str, overrides: list[str], failure: str) -> dict[str, Any]:
    """The composed config's leaves; SystemExit with `failure`, Hydra's first line in its `{}`, if the
    overrides do not compose."""
    register_configs()  # the budgets and reward nodes optimize.yaml's defaults list names
    try:
        with initialize_config_dir(config_dir=conf_dir, version_base="1.3"):
            cfg = compose(config_name="optimize", overrides=overrides)
    except (HydraException, OmegaConfBaseException) as err:
        raise SystemExit("mtmc optimize: " + failure.replace("{}", first_line(err), 1)) from None
    return _leaves(OmegaConf.to_container(cfg, resolve=False))


def _leaves(node: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(node, dict):
        return {prefix.rstrip("."): node}
    return {k: v for key, value in node.items() for k, v in _leaves(value, f"{prefix}{key}.").items()}
