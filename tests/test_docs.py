"""Every document the code, configs and docs cite exists in the repo, and none cites notes outside it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ["mtmc", "coders", "planners", "tests", "benchmarks", "conf", "docs"]
CITED = re.compile(r"(?<![\w<{$/])((?:[\w.-]+/)+[\w.-]+\.md|BENCHMARKS\.md|README\.md|DESIGN\.md)\b")
OUTSIDE = re.compile(r"\bDESIGN\.md\b|\breference/(peers|ecosystem|mtmc-paper|aesthetics)\.md|\.\./shared")


def cited_files() -> list[Path]:
    files = [ROOT / "README.md", ROOT / "BENCHMARKS.md"]
    for folder in SOURCES:
        files += [p for p in (ROOT / folder).rglob("*") if p.suffix in (".py", ".md", ".yaml")
                  and "results" not in p.parts and "__pycache__" not in p.parts]
    return files


def results_branch() -> str | None:
    """The ref of the results branch (raw benchmark data, BENCHMARKS.md), if this clone has it."""
    for ref in ("results", "origin/results"):
        found = subprocess.run(["git", "rev-parse", "--verify", "--quiet", ref], cwd=ROOT,
                               capture_output=True)
        if found.returncode == 0:
            return ref
    return None


def on_results_branch(branch: str, ref: str) -> bool:
    found = subprocess.run(["git", "cat-file", "-e", f"{branch}:{ref}"], cwd=ROOT, capture_output=True)
    return found.returncode == 0


def test_every_cited_document_exists():
    missing, results = [], results_branch()
    for path in cited_files():
        for match in CITED.finditer(path.read_text(errors="replace")):
            ref = match.group(1)
            if "*" in ref or ref.startswith(("runs/", "out/", "tmp/")):
                continue
            if ref.startswith("benchmarks/results/"):  # raw results live on the results branch
                if results and not on_results_branch(results, ref):
                    missing.append(f"{path.relative_to(ROOT)}: {ref} (not on the {results} branch)")
                continue
            if not ((ROOT / ref).is_file() or (path.parent / ref).is_file()):
                missing.append(f"{path.relative_to(ROOT)}: {ref}")
    assert not missing, "cited documents that do not exist:\n" + "\n".join(missing)


def test_nothing_cites_notes_outside_the_repo():
    outside = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in cited_files() if p != Path(__file__)
               for m in OUTSIDE.finditer(p.read_text(errors="replace"))]
    assert not outside, "\n".join(outside)
