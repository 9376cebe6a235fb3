"""The commit a bench run records in its meta (the results manifest's `commit` column)."""

import subprocess
from pathlib import Path

from mtmc.jobs.bench import source_commit

ROOT = Path(__file__).resolve().parents[2]


def test_the_commit_is_mtmc_commit_where_set_else_the_checkouts_head(monkeypatch):
    monkeypatch.setenv("MTMC_COMMIT", "0123abc")  # a tree copied without .git, e.g. to a GPU machine
    assert source_commit() == "0123abc"
    monkeypatch.delenv("MTMC_COMMIT")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    assert source_commit() == (head.stdout.strip() if head.returncode == 0 else None)
