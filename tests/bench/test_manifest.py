"""benchmarks/manifest.py: the manifest's rows and BENCHMARKS.md's current table made from them."""

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("manifest", ROOT / "benchmarks" / "manifest.py")
manifest = importlib.util.module_from_spec(spec)
spec.loader.exec_module(manifest)


def test_benchmarks_md_current_table_is_the_one_rendered_from_the_manifest():
    markdown = manifest.BENCHMARKS_MD.read_text()
    assert manifest.render(markdown, manifest.read_manifest()) == markdown, \
        "run `python benchmarks/manifest.py render` after editing benchmarks/results.csv"


def test_every_manifest_row_names_the_commit_that_holds_its_raw_data():
    rows = manifest.read_manifest()
    assert rows
    for row in rows:
        assert list(row) == list(manifest.FIELDS)
        commit, path = row["where"].split(":", 1)
        assert path.startswith("benchmarks/results/" + row["date"])
        assert int(row["correct"]) <= int(row["tasks"])
        if not shallow():  # the results.json of the run is in that commit
            found = subprocess.run(["git", "cat-file", "-e", f"{commit}:{path}/results.json"], cwd=ROOT)
            assert found.returncode == 0, row["where"]


def shallow() -> bool:
    done = subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=ROOT, capture_output=True,
                          text=True)
    return done.returncode != 0 or done.stdout.strip() != "false"


def bench_folder(root: Path, meta_commit=None) -> Path:
    folder = root / "benchmarks" / "results" / "2026-12-01-h100-bench"
    folder.mkdir(parents=True)
    rows = [{"task": "a", "device": "NVIDIA H100"}, {"task": "b", "device": "NVIDIA H100"},
            {"task": "c", "device": None}]
    meta = {"suite": "builtin", "planner": "planners.heuristic.HeuristicPlanner", "commit": meta_commit}
    agg = {"tasks": 3, "correct": 2, "geomean_speedup_eager": 1.23456, "geomean_speedup_compiled": None}
    (folder / "results.json").write_text(json.dumps({"meta": meta, "aggregates": agg, "tasks": rows}))
    (folder / "bench_config.json").write_text("{}")
    return folder


def test_a_bench_folder_becomes_a_row(tmp_path):
    row = manifest.manifest_row(bench_folder(tmp_path), "f00d", commit="abc123")
    assert row == {"date": "2026-12-01", "gpu": "NVIDIA H100", "commit": "abc123",
                   "config_hash": "44136fa355b3", "suite": "builtin", "planner": "HeuristicPlanner",
                   "tasks": "3", "correct": "2", "geomean_eager": "1.235", "geomean_compile": "",
                   "where": "f00d:benchmarks/results/2026-12-01-h100-bench"}
    # the commit the bench recorded wins over the one given by hand
    recorded = manifest.manifest_row(bench_folder(tmp_path / "2", "def456"), "f00d", "abc123")
    assert recorded["commit"] == "def456"
    assert "| 2026-12-01 | NVIDIA H100 | builtin | HeuristicPlanner | 2/3 | 1.235x | n/a | abc123 |" in \
        manifest.current_table([row])


def test_a_folder_outside_a_results_checkout_is_refused(tmp_path):
    with pytest.raises(ValueError, match="not inside a benchmarks/results/ folder"):
        manifest.manifest_row(tmp_path, "f00d")
