"""The mutation run's table (tests/verify/mutation.py) still applies to today's code: each hand-written
mutant's text occurs exactly once in the file it names. A refactor that moves a check (the split of
verifier.py into engine.py and judging.py did, for 21 of them) must move its mutant too."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import mutation  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name, path, old, new", mutation.MANUAL, ids=[m[0] for m in mutation.MANUAL])
def test_each_mutant_names_the_one_place_its_check_lives(name, path, old, new):
    assert (ROOT / path).read_text().count(old) == 1, f"{name}: not found once in {path}"
    assert old != new
