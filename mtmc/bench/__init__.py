"""`mtmc bench`: optimize every task of a suite, then report correctness, fast_p, speedups, roofline.

    run.py       iterate the suite (one task per GPU at a time), resumable task by task
    metrics.py   one row per task, aggregates (fast_p, geomean, correctness rate)
    roofline.py  the floor against the GPU's measured peaks (mtmc/bench/calibrations/*calibration.json)
    results.py   results.csv / results.json / results.md, speedup.png, fast_p.png
    compare.py   benchmark folders side by side
"""

from mtmc.bench.compare import compare_runs
from mtmc.bench.metrics import aggregate, fast_p
from mtmc.bench.results import write_report
from mtmc.bench.roofline import load_calibrations
from mtmc.bench.run import run_bench, select_tasks, visible_gpus

__all__ = ["aggregate", "compare_runs", "fast_p", "load_calibrations", "run_bench", "select_tasks",
           "visible_gpus", "write_report"]
