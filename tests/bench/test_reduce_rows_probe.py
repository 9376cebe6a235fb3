"""The reduce-rows probe (benchmarks/probes/2026-11-27-reduce-rows/run.py): which kernels its
variants configure, and one dry run on the CPU interpreter."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from benchmarks.probes import harness
from coders.template import TemplateCoder
from mtmc.tasks import load_task

ROOT = Path(__file__).resolve().parents[2]
TASKS = ROOT / "tests" / "coders" / "tasks"


@pytest.fixture(scope="module")
def probe():
    path = ROOT / "benchmarks" / "probes" / "2026-11-27-reduce-rows" / "run.py"
    spec = importlib.util.spec_from_file_location("reduce_rows_probe", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_variant_sets_rows_on_row_kernels_only(probe):
    ir = harness.fused_ir(TemplateCoder(), load_task(TASKS / "layernorm.py"))
    configured, configs = probe.configure(ir, {"ROWS": 16, "num_warps": 4})
    assert [(c["ROWS"], c["num_warps"]) for c in configs] == [(16, 4)]
    assert all("ROWS" not in k.config for k in ir.kernels())  # the base program is left as it was
    column = harness.fused_ir(TemplateCoder(), load_task(TASKS / "column_reduce.py"))
    with pytest.raises(ValueError, match="no row-form reduce kernel"):
        probe.configure(column, {"ROWS": 16})
    with pytest.raises(ValueError, match="unknown keys"):
        probe.configure(ir, {"BLOCK_M": 16})


def test_dry_run_checks_each_variant_against_eager(probe, tmp_path):
    out = tmp_path / "rows.json"
    probe.main(["--tasks-dir", str(TASKS), "--tasks", "layernorm", "--out", str(out), "--cpu-dry-run",
                "--variants", "port:;rows8:ROWS=8"])
    (row,) = json.loads(out.read_text())["rows"]
    assert set(row["variants"]) == {"port", "rows8"}
    assert all(v["max_err"] < 1e-4 for v in row["variants"].values()), row["variants"]
