"""Two benchmark folders side by side (e.g. the same suite under two planners).

    mtmc bench compare=runs/bench/heuristic,runs/bench/random
    compare_runs("runs/bench/heuristic", "runs/bench/random", out_dir="runs/bench/cmp")

Reads each folder's results.json. Aggregates are recomputed over the tasks *both* runs hold, so
the two columns always describe the same task set; tasks only one run holds are listed, not mixed in.
Writes compare.md, compare.json and compare.png (fast_p curves, per-task speedups A against B).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mtmc.bench.metrics import FAST_P, Row, aggregate
from mtmc.bench.report import RESULTS_JSON, draw_fast_p, num, pct, times
from mtmc.report import write_atomic

COMPARE_MD = "compare.md"
COMPARE_JSON = "compare.json"
COMPARE_PLOT = "compare.png"


def load_results(folder: str | Path) -> dict[str, Any]:
    path = Path(folder) / RESULTS_JSON
    if not path.is_file():
        raise FileNotFoundError(f"{folder}: no {RESULTS_JSON}; is it a `mtmc bench` folder? (a bench that "
                                "was cut short writes it when run again with the same out=)")
    return json.loads(path.read_text())


def compare_runs(run_a: str | Path, run_b: str | Path, out_dir: str | Path | None = None,
                 ps: Sequence[float] = FAST_P) -> dict[str, Any]:
    a, b = load_results(run_a), load_results(run_b)
    rows_a = {r["task"]: r for r in a["tasks"]}
    rows_b = {r["task"]: r for r in b["tasks"]}
    common = [name for name in rows_a if name in rows_b]
    result = {
        "runs": {"A": str(run_a), "B": str(run_b)},
        "meta": {"A": a["meta"], "B": b["meta"]},
        "common": common,
        "only_a": [n for n in rows_a if n not in rows_b],
        "only_b": [n for n in rows_b if n not in rows_a],
        "aggregates": {"A": aggregate([rows_a[n] for n in common], ps),
                       "B": aggregate([rows_b[n] for n in common], ps)},
        "tasks": [{"task": n, "A": rows_a[n], "B": rows_b[n]} for n in common],
    }
    result["markdown"] = compare_markdown(result)
    if out_dir is not None:
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        write_atomic(out_dir / COMPARE_MD, result["markdown"])
        write_atomic(out_dir / COMPARE_JSON, json.dumps(result, indent=2) + "\n")
        plot_compare(out_dir / COMPARE_PLOT, [rows_a[n] for n in common], [rows_b[n] for n in common])
    return result


def compare_markdown(result: dict[str, Any]) -> str:
    lines = ["# mtmc bench compare", ""]
    for side in ("A", "B"):
        meta = result["meta"][side]
        lines.append(f"- **{side}**: `{result['runs'][side]}`: suite {meta['suite']}, planner "
                     f"`{meta['planner']}`, coder `{meta['coder']}`, verifier `{meta['verifier']}`")
    extra = [f"only in A: {', '.join(result['only_a'])}" if result["only_a"] else "",
             f"only in B: {', '.join(result['only_b'])}" if result["only_b"] else ""]
    extra_text = "; ".join(e for e in extra if e)
    lines += ["", f"Aggregates over the {len(result['common'])} tasks both runs hold"
              + (f" ({extra_text})." if extra_text else "."), ""]
    lines += ["| metric | A | B |", "|---|---:|---:|"]
    lines += [f"| {name} | {value(result['aggregates']['A'])} | {value(result['aggregates']['B'])} |"
              for name, value in _metrics(result["aggregates"]["A"])]
    lines += ["", "## Tasks", "",
              "| task | correct A | correct B | x eager A | x eager B | x compile A | x compile B "
              "| % roofline A | % roofline B | steps A | steps B |",
              "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for entry in result["tasks"]:
        a, b = entry["A"], entry["B"]
        lines.append(f"| {entry['task']} | {_yes(a)} | {_yes(b)} | {times(a['speedup_eager'])} | "
                     f"{times(b['speedup_eager'])} | {times(a['speedup_compiled'])} | "
                     f"{times(b['speedup_compiled'])} | {num(a['roofline_pct'], '.1f')} | "
                     f"{num(b['roofline_pct'], '.1f')} | {num(a['steps'], 'd')} | {num(b['steps'], 'd')} |")
    return "\n".join(lines) + "\n"


def _metrics(agg: dict[str, Any]) -> list[tuple[str, Any]]:
    """(label, how to print it from an aggregates dict), in table order."""
    rows = [("correct", lambda g: f"{g['correct']}/{g['tasks']} ({num(pct(g['correct_rate']), '.1f')}%)")]
    for base, name in (("eager", "eager"), ("compiled", "torch.compile")):
        for p in agg["fast_p"][base]:
            rows.append((f"fast_{p} over {name}",
                         lambda g, base=base, p=p: _share(g["fast_p"][base][p])))
    rows += [("geomean speedup over eager (correct)", lambda g: times(g["geomean_speedup_eager"])),
             ("geomean speedup over torch.compile (correct)", lambda g: times(g["geomean_speedup_compiled"])),
             ("median % of roofline (correct)", lambda g: num(g["median_roofline_pct"], ".1f")),
             ("verifier calls", lambda g: str(g["verifier_calls"])),
             ("wall time", lambda g: f"{g['wall_s']:.1f} s")]
    return rows


def _share(fraction: float | None) -> str:
    return "n/a" if fraction is None else f"{100 * fraction:.1f}%"


def _yes(row: Row) -> str:
    return "yes" if row["correct"] else row["status"]


def plot_compare(path: Path, rows_a: Sequence[Row], rows_b: Sequence[Row]) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 4.5), layout="constrained")
    left, right = fig.subplots(1, 2)
    drawn = draw_fast_p(left, rows_a, label="A ", linestyle="-")
    drawn = draw_fast_p(left, rows_b, label="B ", linestyle="--") or drawn
    left.set_title("fast_p: A solid, B dashed")
    pairs = [(a["speedup_eager"], b["speedup_eager"], a["task"]) for a, b in zip(rows_a, rows_b, strict=True)
             if a["speedup_eager"] is not None and b["speedup_eager"] is not None]
    if pairs:
        xs, ys, names = zip(*pairs, strict=True)
        right.scatter(xs, ys, zorder=3)
        for x, y, name in pairs:
            right.annotate(name, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
        top = max(xs + ys) * 1.1
        right.plot([0, top], [0, top], color="gray", linewidth=0.8)
        right.set_xlabel("A: speedup over eager")
        right.set_ylabel("B: speedup over eager")
        right.set_title("per task (above the diagonal: B faster); tasks correct in both")
    for ax, empty in ((left, not drawn), (right, not pairs)):
        if empty:
            ax.text(0.5, 0.5, "no timings (CPU interpreter: correctness only)", ha="center", va="center",
                    transform=ax.transAxes)
    fig.savefig(path, dpi=100)
