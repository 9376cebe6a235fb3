"""The installed wheel, not the checkout: `pip install .` (non-editable) must carry everything a job
reads at run time, the Hydra configs (conf/, through the mtmc/conf link) and the measured roofline
calibrations, and its `mtmc` must run from any directory."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    # built from a copy: a build writes build/ and *.egg-info next to the sources
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    for name in ("mtmc", "coders", "planners", "conf"):
        shutil.copytree(ROOT / name, src / name, symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp), str(src)], check=True, capture_output=True)
    (built,) = tmp.glob("mtmc-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    site = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q", "--target",
                    str(site), str(wheel)], check=True, capture_output=True)
    return site


def run_installed(site: Path, *args: str) -> subprocess.CompletedProcess:
    """python with the installed copy first on the path, from a directory outside the checkout."""
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, *args], cwd=site.parent, env=env, capture_output=True, text=True,
                          timeout=120)


def test_the_wheel_carries_every_config_and_calibration(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    configs = {f"mtmc/conf/{p.relative_to(ROOT / 'conf')}" for p in (ROOT / "conf").rglob("*.yaml")}
    assert configs and configs <= names
    calibrations = {f"mtmc/bench/calibrations/{p.name}"
                    for p in (ROOT / "mtmc/bench/calibrations").glob("*calibration.json")}
    assert calibrations and calibrations <= names


def test_the_installed_package_is_the_one_imported(installed):
    out = run_installed(installed, "-c", "import mtmc.cli as c; print(c.__file__); print(c.CONF_DIR)")
    module, conf = out.stdout.split()
    assert module.startswith(str(installed)) and conf.startswith(str(installed))
    assert (Path(conf) / "bench.yaml").is_file() and not Path(conf).is_symlink()


@pytest.mark.parametrize("job", ["bench", "optimize", "train"])
def test_installed_mtmc_composes_its_jobs(installed, job):
    out = run_installed(installed, "-m", "mtmc.cli", job, "--cfg", "job")
    assert out.returncode == 0, out.stderr[-2000:]
    assert "planner:" in out.stdout


def test_installed_bench_finds_its_calibrations(installed):
    out = run_installed(installed, "-c", "from mtmc.bench.roofline import load_calibrations, pick; "
                        "print(pick(load_calibrations('auto'), 'NVIDIA H100 80GB HBM3') is not None)")
    assert out.stdout.strip() == "True", out.stderr[-2000:]
