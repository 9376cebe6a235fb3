"""docs/design.md is the map of the code: every module of mtmc/, planners/ and coders/ is named in
it, and every module it names exists.

A module is named by its path (`mtmc/verify/engine.py`), or by its file name in a part of the map
that names its folder: a row of a table, or a `##` section (the Packages row of `mtmc/verify/`
names `engine.py`; the template coder's section, which names `coders/template/` and `emit/`, names
`emit/reduce.py` as `reduce.py`). A package's `__init__.py` is named with its folder.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DESIGN = ROOT / "docs" / "design.md"
PACKAGES = ("mtmc", "planners", "coders")
MODULE_PATH = re.compile(r"(?<![\w/.])((?:mtmc|planners|coders)/(?:[\w.]+/)*[\w]+\.py)\b")
FOLDER_PATH = re.compile(r"(?<![\w/.])((?:mtmc|planners|coders)/(?:\w+/)*)")
FILE_NAME = re.compile(r"(?<![\w/.])((?:\w+/)*\w+\.py)\b")
# Folders of task files: data the loader reads, named as a folder, not module by module.
DATA_FOLDERS = ("mtmc/tasks/builtin/",)
# File names the map uses that are not modules of the packages.
NOT_MODULES = {"kernel.py": "the kernel file of a run folder"}


def modules() -> list[str]:
    found = (str(p.relative_to(ROOT)) for package in PACKAGES for p in (ROOT / package).rglob("*.py")
             if "__pycache__" not in p.parts)
    return sorted(m for m in found if not m.startswith(DATA_FOLDERS))


def scopes(text: str) -> list[str]:
    """The parts of the map a file name is read in: each table row, and each `##` section."""
    rows = [line for line in text.splitlines() if line.startswith("|")]
    sections = re.split(r"\n(?=## )", text)
    return rows + sections


def folders_named(scope: str) -> set[str]:
    """The package folders a scope names: written out (`coders/template/`), and the sub-folders it
    names relative to them (`emit/` in the template coder's section)."""
    named = set(FOLDER_PATH.findall(scope))
    for folder in list(named):
        for sub in re.findall(r"(?<![\w/.])(\w+)/(?![\w/])", scope):
            if (ROOT / folder / sub).is_dir():
                named.add(f"{folder}{sub}/")
    return named


def named_in(scope: str) -> set[str]:
    """The modules a scope names: full paths, and file names under a folder it names."""
    names = set(MODULE_PATH.findall(scope))
    for folder in folders_named(scope):
        names |= {f"{folder}{name}" for name in FILE_NAME.findall(scope)}
    return names


def test_every_module_is_on_the_map():
    text = DESIGN.read_text()
    folders = set().union(*(folders_named(scope) for scope in scopes(text)))
    named = set().union(*(named_in(scope) for scope in scopes(text)))
    named |= {f"{folder}__init__.py" for folder in folders} | {f"{p}/__init__.py" for p in PACKAGES}
    missing = [m for m in modules() if m not in named]
    missing += [f for f in DATA_FOLDERS if f not in folders]
    assert not missing, "modules docs/design.md does not name (add them to its map):\n" + "\n".join(missing)


def test_every_module_the_map_names_exists():
    text = DESIGN.read_text()
    existing = set(modules())
    ghosts = sorted(m for m in MODULE_PATH.findall(text) if m not in existing)
    for scope in scopes(text):
        folders = folders_named(scope)
        for name in FILE_NAME.findall(scope):
            if folders and name not in NOT_MODULES and not (ROOT / name).is_file() \
                    and not any((ROOT / folder / name).is_file() for folder in folders):
                ghosts.append(f"{name} (under {', '.join(sorted(folders))})")
    assert not ghosts, "docs/design.md names modules that do not exist:\n" + "\n".join(ghosts)
