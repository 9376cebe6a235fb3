"""The measured calibrations ship as package data, so an installed wheel finds them (`calibration=auto`)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile

from mtmc.bench.roofline import CALIBRATION_DIR, load_calibrations, pick


def test_auto_loads_every_shipped_calibration_newest_first():
    calibrations = load_calibrations("auto")
    assert len(calibrations) == len(list(CALIBRATION_DIR.glob("*calibration.json"))) >= 2
    assert pick(calibrations, "NVIDIA H100 80GB HBM3") is not None
    assert pick(calibrations, "NVIDIA H200") is not None
    assert pick(calibrations, "a GPU nobody measured") is None


def test_the_wheel_carries_the_calibrations(tmp_path):
    # built from a copy: a build writes build/ and *.egg-info next to the sources
    root, src = CALIBRATION_DIR.parents[2], tmp_path / "src"
    for name in ("mtmc", "coders", "planners"):
        shutil.copytree(root / name, src / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(root / name, src / name)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(tmp_path), str(src)], check=True, capture_output=True)
    (wheel,) = tmp_path.glob("mtmc-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {p.name for p in CALIBRATION_DIR.glob("*calibration.json")}
    packaged = {n.rsplit("/", 1)[-1] for n in names if n.startswith("mtmc/bench/calibrations/")}
    assert shipped and shipped <= packaged
