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


def in_history(ref: str) -> bool | None:
    """Whether a commit of this clone's history holds `ref` (raw results are archived there, not in
    the tree: BENCHMARKS.md); None in a shallow clone, which cannot tell."""
    shallow = subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=ROOT, capture_output=True,
                             text=True)
    if shallow.returncode != 0 or shallow.stdout.strip() != "false":
        return None
    found = subprocess.run(["git", "log", "-1", "--format=%h", "--", ref], cwd=ROOT, capture_output=True,
                           text=True)
    return bool(found.stdout.strip())


def test_every_cited_document_exists():
    missing = []
    for path in cited_files():
        for match in CITED.finditer(path.read_text(errors="replace")):
            ref = match.group(1)
            if "*" in ref or ref.startswith(("runs/", "out/", "tmp/")):
                continue
            if ref.startswith("benchmarks/results/"):  # raw results: archived in the history
                if in_history(ref) is False:
                    missing.append(f"{path.relative_to(ROOT)}: {ref} (in no commit of the history)")
                continue
            if not ((ROOT / ref).is_file() or (path.parent / ref).is_file()):
                missing.append(f"{path.relative_to(ROOT)}: {ref}")
    assert not missing, "cited documents that do not exist:\n" + "\n".join(missing)


def test_nothing_cites_notes_outside_the_repo():
    outside = [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in cited_files() if p != Path(__file__)
               for m in OUTSIDE.finditer(p.read_text(errors="replace"))]
    assert not outside, "\n".join(outside)
