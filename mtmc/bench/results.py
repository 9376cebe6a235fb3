"""A benchmark folder's outputs, written from its rows (never from live objects):

    results.csv    one row per task (metrics.ROW_FIELDS)
    results.json   {"meta", "aggregates", "tasks"}: what `mtmc bench compare=` and scripts read
    results.md     the aggregates, a fast_p table and the per-task table
    speedup.png    speedup per task over eager and over torch.compile
    fast_p.png     fast_p as a function of p, over eager and over torch.compile

None prints as "n/a": no timings on the CPU interpreter, no roofline without a calibration.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mtmc.bench.metrics import BASELINES, FAST_P, ROW_FIELDS, Row, aggregate, fast_p
from mtmc.report import write_atomic

RESULTS_CSV = "results.csv"
RESULTS_JSON = "results.json"
RESULTS_MD = "results.md"
SPEEDUP_PLOT = "speedup.png"
FAST_P_PLOT = "fast_p.png"
BASELINE_NAMES = {"eager": "eager", "compiled": "torch.compile"}
ROOFLINE_COLUMNS = (("roofline_pct", "kernel"), ("eager_roofline_pct", "eager"),
                    ("compiled_roofline_pct", "torch.compile"))


def write_report(out_dir: Path, rows: Sequence[Row], meta: dict[str, Any],
                 ps: Sequence[float] = FAST_P) -> dict[str, Any]:
    """Write every output file; returns the aggregates."""
    aggregates = aggregate(rows, ps)
    write_atomic(out_dir / RESULTS_CSV, rows_csv(rows))
    results = {"meta": meta, "aggregates": aggregates, "tasks": list(rows)}
    write_atomic(out_dir / RESULTS_JSON, json.dumps(results, indent=2) + "\n")
    write_atomic(out_dir / RESULTS_MD, results_markdown(rows, aggregates, meta))
    plot_speedups(out_dir / SPEEDUP_PLOT, rows)
    plot_fast_p(out_dir / FAST_P_PLOT, rows, ps)
    return aggregates


def rows_csv(rows: Sequence[Row]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=ROW_FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


# ---------------------------------------------------------------------------------------------------
# results.md


def results_markdown(rows: Sequence[Row], agg: dict[str, Any], meta: dict[str, Any]) -> str:
    lines = [f"# mtmc bench: {meta['suite']}", "", meta_line(meta, rows), ""]
    replayed = str(meta.get("verifier", "")).endswith("ReplayVerifier")
    lines += ["## Summary", "", *summary_table(agg, replayed), "", *fast_p_table(agg), ""]
    lines += ["## Tasks", "",
              "| task | status | correct | ms | port ms | eager ms | compile ms | x eager | x compile "
              "| % roofline | steps | verifier calls | wall s |",
              "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['task']} | {r['status']} | {'yes' if r['correct'] else 'no'} | "
                     f"{num(r['candidate_ms'], '.4f')} | {num(r['port_ms'], '.4f')} | "
                     f"{num(r['eager_ms'], '.4f')} | "
                     f"{num(r['compiled_ms'], '.4f')} | {times(r['speedup_eager'])} | "
                     f"{times(r['speedup_compiled'])} | {num(r['roofline_pct'], '.1f')} | "
                     f"{num(r['steps'], 'd')} | {num(r['verifier_calls'], 'd')} | "
                     f"{num(r['wall_s'], '.1f')} |")
    lines += ["", *notes(rows, agg), ""]
    return "\n".join(lines)


def meta_line(meta: dict[str, Any], rows: Sequence[Row]) -> str:
    devices = sorted({r["device"] for r in rows if r["device"]}) or ["none"]
    budgets = meta.get("budgets", {})
    return (f"planner `{meta['planner']}`, coder `{meta['coder']}`, verifier `{meta['verifier']}`; "
            f"max_steps {budgets.get('max_steps')}, max_retries {budgets.get('max_retries')}; "
            f"device: {', '.join(devices)}.")


def summary_table(agg: dict[str, Any], replayed: bool = False) -> list[str]:
    return ["| metric | value |", "|---|---:|",
            f"| tasks | {agg['tasks']} |",
            f"| correct | {agg['correct']} ({num(pct(agg['correct_rate']), '.1f')}%) |",
            f"| errors / missing | {agg['errors']} / {agg['missing']} |",
            f"| geomean speedup over eager (correct tasks) | {times(agg['geomean_speedup_eager'])} |",
            "| geomean speedup over torch.compile (correct tasks) | "
            f"{times(agg['geomean_speedup_compiled'])} |",
            f"| the plain ports alone: over eager / over torch.compile | "
            f"{times(agg['geomean_port_speedup_eager'])} / {times(agg['geomean_port_speedup_compiled'])} |",
            f"| median % of roofline (correct tasks) | {num(agg['median_roofline_pct'], '.1f')} |",
            f"| verifier calls (verdicts ok) | {agg['verifier_calls']} ({num(agg['verified'], 'd')}) |",
            *([f"| unrecorded verdicts (verifier=replay) | {agg['unrecorded']} |"] if replayed else []),
            f"| wall time (tasks' own times, summed) | {agg['wall_s']:.1f} s |",
            f"| elapsed, first start to last finish (s) | {num(agg['elapsed_s'], '.1f')} |",
            f"| verified candidates per minute of it | {num(agg['verified_per_min'], '.2f')} |"]


def fast_p_table(agg: dict[str, Any]) -> list[str]:
    lines = ["| p | fast_p over eager | fast_p over torch.compile |", "|---:|---:|---:|"]
    for p in agg["fast_p"]["eager"]:
        eager, compiled = agg["fast_p"]["eager"][p], agg["fast_p"]["compiled"][p]
        lines.append(f"| {p} | {num(pct(eager), '.1f')}% | {num(pct(compiled), '.1f')}% |"
                     .replace("n/a%", "n/a"))
    return lines


def notes(rows: Sequence[Row], agg: dict[str, Any]) -> list[str]:
    out = []
    if not agg["timed"]:
        out.append("No timings: every task was judged by the Triton interpreter on the CPU (correctness "
                   "only), so speedups, fast_p and % of roofline are n/a.")
    else:
        out += roofline_notes(rows)
    if agg.get("unrecorded"):
        out.append(f"{agg['unrecorded']} verdicts were `unrecorded`: verifier=replay met programs its tree "
                   "does not hold (deeper than the recording, or a coder that changed since); see the "
                   "`unrecorded` column of results.csv.")
    failed = [r for r in rows if r["status"] in ("error", "missing")]
    for r in failed:
        detail = (r["error"] or "").splitlines()[0] if r["status"] == "error" else "no result yet"
        out.append(f"- {r['task']}: {r['status']}: {detail}")
    return out


def roofline_notes(rows: Sequence[Row]) -> list[str]:
    """Why a timed task has no % of roofline, and a warning for every share above 100%."""
    out = []
    timed = [r for r in rows if r["correct"] and r["candidate_ms"] is not None]
    if any(r["roofline_pct"] is None and r["bound"] is None for r in timed):
        out.append("% of roofline is n/a where no measured calibration (mtmc/bench/calibrations/"
                   "*calibration.json, or `calibration=<file>`) matches the GPU.")
    unknown = [r["task"] for r in timed if r["bound"] == "unknown"]
    if unknown:
        out.append(f"% of roofline is n/a for {', '.join(unknown)}: the GPU's calibration has no measured "
                   "rate for the math these tasks may use (TF32: measure it with benchmarks/calibrate.py).")
    for r in rows:
        over = [f"{label} {r[key]:.1f}%" for key, label in ROOFLINE_COLUMNS
                if r[key] is not None and r[key] > 100.0]
        if over:
            out.append(f"- warning: {r['task']} is above its roofline ({', '.join(over)}; floor "
                       f"{r['floor_ms']:.4f} ms, {r['bound']}-bound): faster than the calibrated ceiling, so "
                       "the calibration is below this GPU's peak, the floor uses the wrong rate, or the "
                       "time is wrong.")
    return out


def progress_line(row: Row, index: int, total: int) -> str:
    """The rich line printed as each task finishes."""
    color = "green" if row["correct"] else "red"
    head = f"[{index:>{len(str(total))}}/{total}] {row['task'][:36]:<36} [{color}]{row['status']:<10}[/]"
    if row["status"] == "error":
        return f"{head} {(row['error'] or '').splitlines()[0][:100]}"
    roofline = num(row["roofline_pct"], ".0f") + ("%" if row["roofline_pct"] is not None else "")
    return (f"{head} eager {times(row['speedup_eager']):>6} compile {times(row['speedup_compiled']):>6} "
            f"roofline {roofline:>4}  {row['steps']} steps {row['verifier_calls']} calls "
            f"{row['wall_s']:.1f}s")


def num(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def times(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}x"


def pct(fraction: float | None) -> float | None:
    return None if fraction is None else 100.0 * fraction


# ---------------------------------------------------------------------------------------------------
# plots (Figure without pyplot, as in mtmc/report.py: no global backend state)


def plot_speedups(path: Path, rows: Sequence[Row]) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 1.2 + 0.3 * max(len(rows), 1)), layout="constrained")
    ax = fig.add_subplot()
    ys = list(range(len(rows)))
    if any(r["speedup_eager"] is not None or r["speedup_compiled"] is not None for r in rows):
        # two bars per task; an incorrect or untimed task is a gap at 0, never a made-up value
        for k, (base, color) in enumerate(zip(BASELINES, ("tab:blue", "tab:orange"), strict=True)):
            ax.barh([y + 0.4 * k for y in ys], [r[f"speedup_{base}"] or 0.0 for r in rows], height=0.4,
                    color=color, label=f"over {BASELINE_NAMES[base]}")
        ax.axvline(1.0, color="black", linewidth=0.8)
        ax.set_xlabel("speedup (0 = incorrect or untimed)")
        ax.legend(loc="best")
        ax.set_title("speedup per task")
        ys = [y + 0.2 for y in ys]  # labels between each task's two bars
    else:
        ax.barh(ys, [1.0] * len(rows), color=["tab:green" if r["correct"] else "tab:red" for r in rows])
        ax.set_xticks([])
        ax.set_title("correct (green) / not (red): no timings on the CPU interpreter")
    ax.set_yticks(ys, [r["task"] for r in rows], fontsize=8)
    ax.invert_yaxis()
    fig.savefig(path, dpi=100)


def plot_fast_p(path: Path, rows: Sequence[Row], ps: Sequence[float] = FAST_P) -> None:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 4), layout="constrained")
    ax = fig.add_subplot()
    if draw_fast_p(ax, rows, label=""):
        for p in ps:
            ax.axvline(p, color="gray", linewidth=0.5, linestyle=":")
        ax.set_title(f"fast_p over {len(rows)} tasks")
    else:
        ax.text(0.5, 0.5, "no timings (CPU interpreter: correctness only)\nfast_p is n/a",
                ha="center", va="center", transform=ax.transAxes)
        ax.set_title("fast_p")
    fig.savefig(path, dpi=100)


def draw_fast_p(ax: Any, rows: Sequence[Row], label: str, linestyle: str = "-") -> bool:
    """fast_p(p) curves over eager and torch.compile on `ax`; False when there is nothing timed."""
    speedups = [r[f"speedup_{b}"] for r in rows for b in BASELINES if r[f"speedup_{b}"] is not None]
    if not speedups:
        return False
    top = max(2.5, 1.1 * max(speedups))
    grid = [top * i / 400 for i in range(401)]
    for base, color in zip(BASELINES, ("tab:blue", "tab:orange"), strict=True):
        ax.plot(grid, [fast_p(rows, p, base) for p in grid], color=color, linestyle=linestyle,
                drawstyle="steps-post", label=f"{label}over {BASELINE_NAMES[base]}")
    ax.set_xlabel("p (speedup threshold)")
    ax.set_ylabel("fast_p (share of all tasks)")
    ax.set_ylim(-0.02, 1.02)
    ax.legend(loc="best")
    return True
