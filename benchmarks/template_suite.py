"""Template coder on a suite, on one GPU: the plain port and the best program a planner reaches.

    python benchmarks/template_suite.py --out template.jsonl [--suite builtin] [--tasks a,b]
        [--max-steps 8] [--time-limit-s 600]

For each task: `mtmc optimize` in-process (heuristic planner, template coder, GPU verifier), then
one line with the port's verdict and the final verdict (times from the verifier: eager and
torch.compile timed in the same worker pool, roofline floor from the calibrated ceilings).
A task the template coder cannot port is recorded as such, never skipped silently.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from rich.console import Console

from coders.template import TemplateCoder
from mtmc.budgets import Budgets
from mtmc.optimize import run_optimize
from mtmc.tasks import load_suite
from mtmc.verify import LocalVerifier
from planners.heuristic import HeuristicPlanner


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", default="builtin")
    parser.add_argument("--tasks", default="", help="comma-separated names, run in this order (default: all)")
    parser.add_argument("--max-steps", type=int, default=8)
    parser.add_argument("--time-limit-s", type=float, default=600.0, help="wall clock per task")
    parser.add_argument("--out", default="template.jsonl")
    parser.add_argument("--runs", default=None, help="folder for the run directories")
    args = parser.parse_args()
    keep = [name for name in args.tasks.split(",") if name]
    tasks = load_suite(args.suite)
    if keep:  # in the order given, so a run cut short has done the first ones
        by_name = {t.name: t for t in tasks}
        tasks = [by_name[name] for name in keep]
    runs = Path(args.runs or tempfile.mkdtemp())
    console = Console(width=150)
    with LocalVerifier() as verifier, open(args.out, "a") as out:
        for task in tasks:
            t0 = time.perf_counter()
            row = {"task": task.name, "family": task.meta.get("family"), "split": task.split}
            try:
                result = run_optimize(task, HeuristicPlanner(), TemplateCoder(), verifier, runs / task.name,
                                      budgets=Budgets(max_steps=args.max_steps, max_retries=1,
                                                      time_limit_s=args.time_limit_s),
                                      console=console)
                port = next((r for r in result.trajectory if r["strategy"] == "port"), None)
                row.update(port=port and port["verdict"], final=result.verdict and result.verdict.to_dict(),
                           steps=[(r["strategy"], r["status"], r["outcome"], r.get("speedup_eager"))
                                  for r in result.trajectory],
                           stop_reason=result.stop_reason)
            except Exception as err:  # recorded, not hidden: the table shows which tasks failed and why
                row.update(error=f"{type(err).__name__}: {err}")
            row["wall_s"] = time.perf_counter() - t0
            out.write(json.dumps(row, default=str) + "\n")
            out.flush()


if __name__ == "__main__":
    main()
