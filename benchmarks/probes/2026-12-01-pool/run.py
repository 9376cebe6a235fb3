"""Probe the template coder's pool kernels on a GPU: 42_Max_Pooling_2D's band, slide step and
separated taps on an H200 (issue 22), and 41's and 44's slide step.

    python benchmarks/probes/2026-12-01-pool/run.py --tasks-dir .kb/l1 \
        --tasks 42_ 41_ 44_ --out $OUT/pool01.json --time-limit 150 --no-compile

As 2026-11-30-pool/run.py (its configure: `sep` on the slide only, `shift=0` turns the port's shift
off; it uses 2026-11-28-pool's configure, probe_task and main), with this probe's menus (MENUS, the
port first, then the most promising). `BAND` (output rows a program) is the rows form's own key: a
variant naming it replaces the launcher's `_pool_band`.
"""

from __future__ import annotations

import time

START = time.monotonic()  # --time-limit counts from here: the imports are in it

import importlib.util  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository: benchmarks/ is not installed


def _probe(folder: str):
    """A probe's run.py as a module (its folder's name is not a package name)."""
    path = Path(__file__).resolve().parents[1] / folder / "run.py"
    spec = importlib.util.spec_from_file_location(f"pool_probe_{folder.replace('-', '_')}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


sep_probe = _probe("2026-11-30-pool")  # loads 2026-11-28-pool (sep_probe.previous), which sets
previous = sep_probe.previous          # TRITON_INTERPRET for --cpu-dry-run before triton loads
previous.START = START  # its main's wall clock counts from this script's first line

# per task, the port first, then the most promising (README: why each)
MENUS = {
    # 42: k4 s1 p1 on [32, 64, 512, 512] -> 511 x 511; the port is sh4-512-w4-s2 with BAND 128
    # (4 bands a plane: 8192 programs, 6.2 waves of 10 programs an SM)
    "42_": ["port:",
            "sh4-s2-b32:form=rows,BLOCK_N=512,num_warps=4,shift=4,slide=2,BAND=32",
            "sh4-s3-b48:form=rows,BLOCK_N=512,num_warps=4,shift=4,slide=3,BAND=48",
            "sh4-s2-b64:form=rows,BLOCK_N=512,num_warps=4,shift=4,slide=2,BAND=64",
            "sh8-w2-s2-b32:form=rows,BLOCK_N=512,num_warps=2,shift=8,slide=2,BAND=32",
            "sh4-s1-b32:form=rows,BLOCK_N=512,num_warps=4,shift=4,slide=1,BAND=32",
            "sep-w4-s2-b32:form=rows,BLOCK_N=512,num_warps=4,slide=2,shift=0,sep=1,BAND=32"],
    # 41: MaxPool1d k8 s1 p4 d3, rows of 65536; the port is sh8-2048-w8 (one row a step)
    "41_": ["port:",
            "sh8-2048-w8-s2:form=rows,BLOCK_N=2048,num_warps=8,shift=8,slide=2",
            "sh8-1024-w4-s2:form=rows,BLOCK_N=1024,num_warps=4,shift=8,slide=2"],
    # 44: AvgPool1d k8 s1 p4, rows of 65536; the port is sh8-2048-w8
    "44_": ["port:",
            "sh8-2048-w8-s2:form=rows,BLOCK_N=2048,num_warps=8,shift=8,slide=2",
            "sh8-1024-w4-s2:form=rows,BLOCK_N=1024,num_warps=4,shift=8,slide=2"],
}


def main(argv: list[str] | None = None) -> None:
    previous.MENUS = MENUS
    previous.configure = sep_probe.configure  # the name its probe_task hands on
    previous.main(argv)


if __name__ == "__main__":
    main()
