"""Probe the template coder's pool kernels on a GPU: the slide's separated taps (issue 22).

    python benchmarks/probes/2026-11-30-pool/run.py --tasks-dir .kb/l1 \
        --tasks 43_ 46_ --out $OUT/pool30.json --time-limit 150 --no-compile

As 2026-11-28-pool/run.py (whose configure, probe_task and main it uses, as 2026-11-29-pool does;
the error, the copy bandwidth, the floor and the dry-run sizes are 2026-11-26-pool's), with the key
`sep` (coders/template/emit/pool_sep.py, off in the port) among a variant's keys and this probe's
menus (MENUS, the port first, then the most promising). A variant whose separated taps do not apply
(pool_sep.sep_ok) fails rather than run the slide's own path.
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

from coders.template.emit import pool_sep  # noqa: E402
from coders.template.ir import ProgramIR  # noqa: E402

configure_28 = previous.configure

# per task, the port first, then the most promising. 43: k3 s2 p1 d3, rows of 128 -> 62 (a strip of
# 64 outputs, 128 input columns: 4 a thread at one warp); 46: k3 s2 p1, rows of 256 -> 128
MENUS = {
    "43_": ["port:",
            "sep-64-w1-s2:form=rows,BLOCK_N=64,num_warps=1,slide=2,shift=0,sep=1",
            "sep-64-w2-s2:form=rows,BLOCK_N=64,num_warps=2,slide=2,shift=0,sep=1",
            "sep-64-w1-s1:form=rows,BLOCK_N=64,num_warps=1,slide=1,shift=0,sep=1",
            "sep-64-w1-s4:form=rows,BLOCK_N=64,num_warps=1,slide=4,shift=0,sep=1"],
    # 46: the port (sh2-128-w2-s2 since a2012c5) against the port before it (the slide, plain taps),
    # then the separated taps
    "46_": ["port:",
            "slide-128-w4-s2:form=rows,BLOCK_N=128,num_warps=4,slide=2,shift=0",
            "sep-128-w2-s2:form=rows,BLOCK_N=128,num_warps=2,slide=2,shift=0,sep=1",
            "sep-128-w1-s1:form=rows,BLOCK_N=128,num_warps=1,slide=1,shift=0,sep=1"],
}


def configure(ir: ProgramIR, overrides: dict[str, Any]) -> tuple[ProgramIR, list[dict]]:
    """2026-11-28-pool's configure, with `sep` on the slide only (shift=0 turns the port's shift off)."""
    ir, _ = configure_28(ir, overrides)
    for kernel in (k for k in ir.kernels() if k.kind == "pool"):
        if not kernel.config.get("shift"):
            kernel.config.pop("shift", None)
        if kernel.config.get("sep") and not pool_sep.is_sep(kernel):
            raise ValueError("sep needs the slide above 1-D, no vector taps, no shift or stack and "
                             "whole-rank window operands")
    return ir, [dict(k.config) for k in ir.kernels() if k.kind == "pool"]


def main(argv: list[str] | None = None) -> None:
    previous.MENUS = MENUS
    previous.configure = configure  # the name its probe_task hands on
    previous.main(argv)


if __name__ == "__main__":
    main()
