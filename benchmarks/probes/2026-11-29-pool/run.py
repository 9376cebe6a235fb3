"""Probe the template coder's pool kernels on a GPU: the rows form's stacked planes (issue 22).

    python benchmarks/probes/2026-11-29-pool/run.py --tasks-dir .kb/l1 \
        --tasks 43_ 45_ 46_ --out $OUT/pool-stack.json --time-limit 150 --no-compile

As 2026-11-28-pool/run.py (whose configure, probe_task and main it uses; the error, the copy
bandwidth, the floor and the dry-run sizes are 2026-11-26-pool's), with the key `stack` (P: planes
per strip; coders/template/emit/pool_stack.py, off in the port) among a variant's keys and this
probe's menus (MENUS, the port first, then the most promising). A variant whose stack does not apply
(pool_stack.stack_ok) fails rather than run unstacked.
"""

from __future__ import annotations

import time

START = time.monotonic()  # --time-limit counts from here: the imports are in it

import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository: benchmarks/ is not installed

from benchmarks.probes.load import load_probe as _probe  # noqa: E402

previous = _probe("2026-11-28-pool")  # sets TRITON_INTERPRET for --cpu-dry-run before triton loads
previous.START = START  # its main's wall clock counts from this script's first line

from coders.template.emit import pool_stack  # noqa: E402
from coders.template.ir import ProgramIR  # noqa: E402

configure_28 = previous.configure

# per task, the port first, then the most promising. 43's output rows are 62 wide: a strip of P rows
# of 64 columns; G x 32 x num_warps = BLOCK_N keeps one group per thread
MENUS = {
    "43_": ["port:",
            "st4-sh8-256-w1-s2:form=rows,BLOCK_N=256,num_warps=1,shift=8,slide=2,stack=4",
            "st8-sh8-512-w2-s2:form=rows,BLOCK_N=512,num_warps=2,shift=8,slide=2,stack=8",
            "st2-sh4-128-w1-s2:form=rows,BLOCK_N=128,num_warps=1,shift=4,slide=2,stack=2",
            "st8-sh4-512-w4-s2:form=rows,BLOCK_N=512,num_warps=4,shift=4,slide=2,stack=8",
            "st4-sh8-256-w1:form=rows,BLOCK_N=256,num_warps=1,shift=8,stack=4"],
    # 45: k11 s11 windows share no rows; the 186-wide row in one strip of 256; G 4: a group's 44
    # input columns are 11 aligned chunks (ST x G = 44); the slide's STEP rows in straight code
    "45_": ["port:",
            "sh4-256-w2-s1:form=rows,BLOCK_N=256,num_warps=2,shift=4,slide=1",
            "sh4-256-w2:form=rows,BLOCK_N=256,num_warps=2,shift=4",
            "sh8-256-w1:form=rows,BLOCK_N=256,num_warps=1,shift=8"],
    # 46: k3 s2 p1, rows of 128 (one strip); G 4: taps at 2j + k - 1 read chunks -4..7, G 2: -4..3
    "46_": ["port:",
            "sh4-128-w1-s2:form=rows,BLOCK_N=128,num_warps=1,shift=4,slide=2",
            "st2-sh4-256-w2-s2:form=rows,BLOCK_N=256,num_warps=2,shift=4,slide=2,stack=2",
            "sh2-128-w2-s2:form=rows,BLOCK_N=128,num_warps=2,shift=2,slide=2",
            "st2-sh8-256-w1-s2:form=rows,BLOCK_N=256,num_warps=1,shift=8,slide=2,stack=2"],
}


def configure(ir: ProgramIR, overrides: dict[str, Any]) -> tuple[ProgramIR, list[dict]]:
    """2026-11-28-pool's configure, with `stack` on the rows form only."""
    if overrides.get("stack") and overrides.get("form") not in (None, "rows"):
        raise ValueError("stack is a key of the rows form")
    ir, _ = configure_28(ir, overrides)
    for kernel in (k for k in ir.kernels() if k.kind == "pool"):
        if kernel.config.get("form") != "rows":
            kernel.config.pop("stack", None)
        elif kernel.config.get("stack") and not pool_stack.is_stack(kernel):
            raise ValueError("the stack needs the rows form above 1-D, no vector taps, a power-of-two "
                             "P dividing the strip into rows of at least a group, one plane per column")
    return ir, [dict(k.config) for k in ir.kernels() if k.kind == "pool"]


def main(argv: list[str] | None = None) -> None:
    previous.MENUS = MENUS
    previous.configure = configure  # the name its probe_task hands on
    previous.main(argv)


if __name__ == "__main__":
    main()
