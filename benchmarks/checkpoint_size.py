"""Size of a run's checkpoints.sqlite after 10, 20 and 40 steps of a scripted run (CPU, seconds).

    python benchmarks/checkpoint_size.py

The scripted planner ports, then proposes a slower tile step again and again (each one rejected), so
the trajectory grows by one attempt a step, as in a real run; the fakes are the tests' own.
"""

import io
import sqlite3
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository: the fakes live in tests/

from rich.console import Console  # noqa: E402

from mtmc.budgets import Budgets  # noqa: E402
from mtmc.optimize import CHECKPOINTS, run_optimize  # noqa: E402
from tests.graph.fakes import TaggedVerifier, tiny_task  # noqa: E402
from tests.scripted_coder import ScriptedCoder  # noqa: E402
from tests.scripted_planner import ScriptedPlanner  # noqa: E402


def measure(steps: int) -> tuple[int, int]:
    out = Path(tempfile.mkdtemp())
    plan = ["port"] + ["tile BLOCK=1024"] * (steps - 1)
    coder = ScriptedCoder({"port": ["ok@2.0"], "tile BLOCK=1024": ["ok@3.0"]})
    run_optimize(tiny_task(), ScriptedPlanner(plan), coder, TaggedVerifier(eager_ms=2.0), out,
                 budgets=Budgets(max_steps=steps, max_retries=0, time_limit_s=600.0),
                 console=Console(file=io.StringIO()))
    with sqlite3.connect(out / CHECKPOINTS) as db:
        rows = db.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0]
    return rows, sum(p.stat().st_size for p in out.glob(CHECKPOINTS + "*"))  # with -wal and -shm


if __name__ == "__main__":
    for steps in (10, 20, 40):
        rows, size = measure(steps)
        print(f"steps {steps}: {CHECKPOINTS} {size} bytes (with -wal/-shm), {rows} checkpoint rows")
