"""Probe the template coder's pool kernels on a GPU: 42_Max_Pooling_2D's band, slide step and
separated taps on an H200 (issue 22), 41's and 44's slide step, and the separated taps' gathered
last-dim taps (`sep_gather`) on 42, 43 and 46.

    python benchmarks/probes/2026-12-01-pool/run.py --tasks-dir .kb/l1 \
        --tasks 42_ 41_ 44_ 43_ 46_ --out $OUT/pool01.json --time-limit 150 --no-compile

As 2026-11-30-pool/run.py (its configure: `sep` on the slide only, `shift=0` turns the port's shift
off; it uses 2026-11-28-pool's configure, probe_task and main), with this probe's menus (MENUS, the
port first, then the most promising). `BAND` (output rows a program) is the rows form's own key: a
variant naming it replaces the launcher's `_pool_band`. `sep_gather=G` (emit/pool_sep.py: an output
row's last-dim taps G a tl.gather) needs `sep` and G a power of two of at least 2.
"""

from __future__ import annotations

import time

START = time.monotonic()  # --time-limit counts from here: the imports are in it

import sys  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository: benchmarks/ is not installed

from benchmarks.probes.load import load_probe as _probe  # noqa: E402

sep_probe = _probe("2026-11-30-pool")  # loads 2026-11-28-pool (sep_probe.previous), which sets
previous = sep_probe.previous          # TRITON_INTERPRET for --cpu-dry-run before triton loads
previous.START = START  # its main's wall clock counts from this script's first line

from coders.template.ir import ProgramIR  # noqa: E402

# per task, the port first, then the most promising (README: why each)
MENUS = {
    # 42: k4 s1 p1 on [32, 64, 512, 512] -> 511 x 511; the port is sh4-512-w4-s2 with BAND 128
    # (4 bands a plane: 8192 programs, 6.2 waves of 10 programs an SM)
    "42_": ["port:",
            "sh4-s2-b32:form=rows,BLOCK_N=512,num_warps=4,shift=4,slide=2,BAND=32",
            "sh4-s3-b48:form=rows,BLOCK_N=512,num_warps=4,shift=4,slide=3,BAND=48",
            "sh8-w2-s2-b32:form=rows,BLOCK_N=512,num_warps=2,shift=8,slide=2,BAND=32",
            "sep-g4-w4-s2-b32:form=rows,BLOCK_N=512,num_warps=4,slide=2,shift=0,sep=1,BAND=32,sep_gather=4",
            "sep-g4-w4-s3-b48:form=rows,BLOCK_N=512,num_warps=4,slide=3,shift=0,sep=1,BAND=48,sep_gather=4"],
    # 41: MaxPool1d k8 s1 p4 d3, rows of 65536; the port is sh8-2048-w8 (one row a step)
    "41_": ["port:",
            "sh8-2048-w8-s2:form=rows,BLOCK_N=2048,num_warps=8,shift=8,slide=2",
            "sh8-1024-w4-s2:form=rows,BLOCK_N=1024,num_warps=4,shift=8,slide=2"],
    # 44: AvgPool1d k8 s1 p4, rows of 65536; the port is sh8-2048-w8
    "44_": ["port:",
            "sh8-2048-w8-s2:form=rows,BLOCK_N=2048,num_warps=8,shift=8,slide=2",
            "sh8-1024-w4-s2:form=rows,BLOCK_N=1024,num_warps=4,shift=8,slide=2"],
    # 43: MaxPool3d k3 s2 p1 d3, rows of 128 -> 62; the port is sep-64-w2-s2 (per-tap gathers)
    "43_": ["port:",
            "sep-g4-64-w2-s2:form=rows,BLOCK_N=64,num_warps=2,slide=2,shift=0,sep=1,sep_gather=4"],
    # 46: AvgPool3d k3 s2 p1, rows of 256 -> 128; the port is sh2-128-w2-s2 (sep-128-w2-s2 ran 84.0%)
    "46_": ["port:",
            "sep-g4-128-w2-s2:form=rows,BLOCK_N=128,num_warps=2,slide=2,shift=0,sep=1,sep_gather=4"],
}


def configure(ir: ProgramIR, overrides: dict[str, Any]) -> tuple[ProgramIR, list[dict]]:
    """2026-11-30-pool's configure; a variant's `sep_gather` needs `sep` on and G a power of two of
    at least 2 (else it fails rather than run the per-tap gathers)."""
    gather = int(overrides.get("sep_gather") or 0)
    if gather and (gather < 2 or gather & (gather - 1) or not overrides.get("sep")):
        raise ValueError("sep_gather needs sep and a power of two of at least 2")
    return sep_probe.configure(ir, overrides)


def main(argv: list[str] | None = None) -> None:
    previous.MENUS = MENUS
    previous.configure = configure  # the name its probe_task hands on
    previous.main(argv)


if __name__ == "__main__":
    main()
