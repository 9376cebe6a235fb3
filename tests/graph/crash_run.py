"""A scripted `run_optimize` the resume test runs in a subprocess and kills mid-run.

    python tests/graph/crash_run.py OUT_DIR SLEEP_S [DIE_AT_CHECKPOINT]

With DIE_AT_CHECKPOINT = n the process kills itself (SIGKILL) as it is about to write its n-th
checkpoint: the node before it has ended and its writes are saved, the checkpoint after it is not.

The script covers every gate route: accept, retry then reject, slower-so-rejected, CoderError. Each
strategy has one outcome, so the scripted coder's answers do not depend on its call counts, which
a killed process loses.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

if __name__ == "__main__":  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from mtmc.budgets import Budgets  # noqa: E402
from mtmc.optimize import OptimizeResult, run_optimize  # noqa: E402
from tests.graph.fakes import TaggedVerifier, tiny_task  # noqa: E402
from tests.scripted_coder import ScriptedCoder  # noqa: E402
from tests.scripted_planner import ScriptedPlanner  # noqa: E402

STEPS = ["port", "fuse epilogue", "tile BLOCK=1024", "vectorize", "num_warps 8", "autotune"]
SCRIPT = {"port": ["ok@2.0"], "fuse epilogue": ["incorrect"], "tile BLOCK=1024": ["ok@3.0"],
          "vectorize": ["raise:no vector width fits"], "num_warps 8": ["ok@1.0"], "autotune": ["ok@0.8"]}
ATTEMPTS = 8  # port 1, fuse 2 (retry, reject), tile 1 (slower), vectorize 2 (coder errors), 1, 1


def optimize(out_dir: str | Path, *, sleep_s: float = 0.0, resume: bool = False,
             console=None) -> OptimizeResult:
    coder = ScriptedCoder(SCRIPT, usage={"prompt_tokens": 5})
    verifier = TaggedVerifier(eager_ms=2.0, sleep_s=sleep_s)
    return run_optimize(tiny_task(), ScriptedPlanner(STEPS), coder, verifier, out_dir,
                        budgets=Budgets(max_steps=10, max_retries=1, time_limit_s=600.0), resume=resume,
                        console=console)


def die_at_checkpoint(n: int) -> None:
    """SIGKILL this process in place of writing its n-th checkpoint."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    put, calls = SqliteSaver.put, []

    def put_or_die(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == n:
            os.kill(os.getpid(), signal.SIGKILL)
        return put(self, *args, **kwargs)

    SqliteSaver.put = put_or_die


if __name__ == "__main__":
    if len(sys.argv) > 3:
        die_at_checkpoint(int(sys.argv[3]))
    optimize(sys.argv[1], sleep_s=float(sys.argv[2]))
