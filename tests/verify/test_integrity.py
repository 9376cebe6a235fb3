"""The seal over the verifier's own files (mtmc/verify/integrity.py)."""

import os

import pytest

from mtmc.verify.integrity import IntegrityError, Seal


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "rules.py").write_text("STRICT = True\n")
    (tmp_path / "pkg" / "sub" / "more.py").write_text("TOLERANCE = 1e-4\n")
    seal = Seal()
    seal.add_tree(tmp_path / "pkg")
    return tmp_path / "pkg", seal


def test_an_untouched_tree_passes(tree):
    folder, seal = tree
    seal.check()
    assert len(seal) == 2


def test_a_touch_or_an_editors_rename_of_the_same_bytes_passes(tree):
    folder, seal = tree
    os.utime(folder / "rules.py", ns=(1, 1))
    (folder / "sub" / "copy.tmp").write_text("TOLERANCE = 1e-4\n")
    os.replace(folder / "sub" / "copy.tmp", folder / "sub" / "more.py")
    seal.check()
    seal.check()


def test_compiled_files_are_not_sealed(tree):
    folder, seal = tree
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "rules.cpython-311.pyc").write_bytes(b"\0")
    seal.check()


@pytest.mark.parametrize("change,named", [
    (lambda f: (f / "rules.py").write_text("STRICT = False\n"), "rules.py"),
    (lambda f: (f / "sub" / "more.py").unlink(), "more.py"),
    (lambda f: (f / "sub" / "sitecustomize.py").write_text("import os\n"), "sitecustomize.py (added)"),
], ids=["edited", "removed", "added"])
def test_a_changed_file_is_refused_by_name(tree, change, named):
    folder, seal = tree
    change(folder)
    with pytest.raises(IntegrityError, match="refuses to judge") as err:
        seal.check()
    assert named in str(err.value)


def test_a_single_file_is_sealed_by_content(tmp_path):
    inputs = tmp_path / "inputs.pt"
    inputs.write_bytes(b"seeds")
    seal = Seal()
    seal.add_file(inputs)
    inputs.write_bytes(b"SEEDS")
    with pytest.raises(IntegrityError, match="inputs.pt"):
        seal.check()
