"""The verifier's own files must not change while it judges: a seal over them, checked per verdict.

A candidate that escaped its sandbox could rewrite the installed verifier (an editable checkout) or
a task's reference data, so that a later verdict, its own or another candidate's, is judged by code
or data of its choosing. `Seal` hashes the files once (the verifier's package, the task files and
the reference inputs it uses) and re-checks them before each verdict: a stat per file, and a new
hash only for a file whose size, mtime or inode moved, and a new listing only of a sealed tree one
of whose folders moved. A changed, removed or added file raises IntegrityError, and the verifier
refuses to judge. Compiled files (__pycache__) are not sealed: Python rewrites them itself.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


class IntegrityError(RuntimeError):
    """A sealed file changed: nothing this process judges from now on can be trusted."""


class Seal:
    def __init__(self) -> None:
        self._files: dict[Path, tuple[tuple[int, int, int], str]] = {}  # path -> (stat key, sha256)
        self._trees: dict[Path, frozenset[Path]] = {}  # sealed folders -> their .py files
        self._folders: dict[Path, tuple[int, int, int]] = {}  # every folder in them -> its stat key

    def add_file(self, path: str | Path) -> None:
        path = Path(path).resolve()
        if path not in self._files:
            self._files[path] = (_stat_key(path), _sha256(path))

    def add_tree(self, folder: str | Path) -> None:
        """Every .py file under `folder`, and the list of them: an added module is a change too."""
        folder = Path(folder).resolve()
        files = _python_files(folder)
        self._trees[folder] = files
        for path in files:
            self.add_file(path)
        self._folders.update(_folder_keys(folder))

    def check(self) -> None:
        """Raise IntegrityError naming what changed since it was sealed."""
        # Snapshots (one C call each under the GIL): another thread may seal a task's files meanwhile.
        files, folders = list(self._files.items()), list(self._folders.items())
        changed = [str(p) for p, (key, digest) in files if _changed(p, key, digest)]
        if any(_stat_key_or_none(f) != key for f, key in folders):  # an entry came or went
            for folder, listed in list(self._trees.items()):
                changed += [f"{p} (added)" for p in sorted(_python_files(folder) - listed)]
            if not changed:  # a rename in place (an editor's save) of the same bytes: nothing to refuse
                for folder in list(self._trees):
                    self._folders.update(_folder_keys(folder))
        if changed:
            raise IntegrityError("the verifier's own files changed since it started, so it refuses to judge "
                                 "(a candidate escaped its sandbox, or the checkout was edited under a "
                                 "running verifier; restart it): " + ", ".join(changed[:8]))

    def __len__(self) -> int:
        return len(self._files)


def _changed(path: Path, key: tuple[int, int, int], digest: str) -> bool:
    try:
        if _stat_key(path) == key:
            return False
        return _sha256(path) != digest  # touched but maybe not changed: the content decides
    except OSError:
        return True  # removed or unreadable


def _stat_key(path: Path) -> tuple[int, int, int]:
    stat = os.stat(path)
    return stat.st_size, stat.st_mtime_ns, stat.st_ino


def _stat_key_or_none(path: Path) -> tuple[int, int, int] | None:
    try:
        return _stat_key(path)
    except OSError:
        return None


def _folder_keys(folder: Path) -> dict[Path, tuple[int, int, int]]:
    """Stat keys of `folder` and the folders below it (not __pycache__: Python writes there)."""
    folders = [folder, *(p for p in folder.rglob("*") if p.is_dir() and "__pycache__" not in p.parts)]
    return {p: _stat_key(p) for p in folders}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _python_files(folder: Path) -> frozenset[Path]:
    return frozenset(p.resolve() for p in folder.rglob("*.py") if "__pycache__" not in p.parts)
