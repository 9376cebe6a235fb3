"""Is any benchmarked task faster than its roofline? (issue 25, Show 5)

    python benchmarks/roofline_audit.py                         # every folder of the manifest
    python benchmarks/roofline_audit.py <bench folder> [...]    # and these folders on disk (new runs)
    python benchmarks/roofline_audit.py --no-manifest <bench folder> [...]

Manifest folders are read from the commit that archived them (benchmarks/results.csv, `where`), so
nothing needs checking out. A task's fraction is roofline ms / its final candidate ms: 1.0 runs at the
floor, above 1.0 is faster than the hardware floor says it can be. Two rooflines are on record and
they differ, so both are audited:

- bench: results.json's `floor_ms` (mtmc/bench/roofline.py, the GPU's measured calibration), the
  floor of the "% roofline" column in BENCHMARKS.md's tables (roofline_pct = 100 x this fraction);
- verifier: `roofline_ms` of the final verdict in <task>/result.json (the verifier's own table of
  peaks), what `Verdict.roofline_fraction` reads.

Prints every task's fractions, then a markdown summary; exits 1 if any fraction is above 1.0.
A verdict is counted once per folder that holds it (a combined folder repeats its parts' rows).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository: benchmarks/ is not installed

from benchmarks.kb_families import rows_of  # noqa: E402
from benchmarks.manifest import ROOT, read_manifest  # noqa: E402

ROOFLINES = {
    "bench": "bench floor (results.json `floor_ms`: the tables' % roofline)",
    "verifier": "verifier (`roofline_ms` of the verdict in <task>/result.json)",
}
RESULTS_PREFIX = "benchmarks/results/"


@dataclass
class BenchFolder:
    name: str
    rows: list[dict]  # results.json's task rows
    verdict_of: Callable[[str], dict | None]  # a task's final verdict, None without a result.json


@dataclass
class Timing:
    """One task's final time against one roofline."""
    roofline: str  # a key of ROOFLINES
    folder: str
    task: str
    status: str
    bound: str | None
    candidate_ms: float | None
    roofline_ms: float | None

    @property
    def fraction(self) -> float | None:
        if not self.candidate_ms or self.roofline_ms is None:  # untimed (CPU), or no floor on record
            return None
        return self.roofline_ms / self.candidate_ms


# ---------------------------------------------------------------------------------------------------
# reading folders


def archived_folder(where: str) -> BenchFolder:
    """A manifest folder, `<commit>:benchmarks/results/<folder>`, read from that commit."""
    commit, path = where.split(":", 1)
    held = set(git("ls-tree", "-r", "--name-only", commit, path).split())

    def verdict_of(task: str) -> dict | None:
        result = f"{path}/{task}/result.json"
        return json.loads(git("show", f"{commit}:{result}"))["verdict"] if result in held else None

    rows = json.loads(git("show", f"{commit}:{path}/results.json"))["tasks"]
    return BenchFolder(path.removeprefix(RESULTS_PREFIX), rows, verdict_of)


def disk_folder(folder: Path) -> BenchFolder:
    """A bench folder on disk; a run cut off before its report still has its tasks' bench.json."""
    def verdict_of(task: str) -> dict | None:
        result = folder / task / "result.json"
        return json.loads(result.read_text())["verdict"] if result.is_file() else None

    return BenchFolder(str(folder), rows_of(folder), verdict_of)


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


# ---------------------------------------------------------------------------------------------------
# the audit


def timings(folder: BenchFolder) -> list[Timing]:
    """Every task of the folder against both rooflines."""
    out = []
    for row in folder.rows:
        verdict = folder.verdict_of(row["task"]) or {}
        common = {"folder": folder.name, "task": row["task"], "bound": row.get("bound")}
        out.append(Timing("bench", status=row["status"], candidate_ms=row.get("candidate_ms"),
                          roofline_ms=row.get("floor_ms"), **common))
        # no result.json (an error, a combined folder): the row's status, so an ok task is still counted
        out.append(Timing("verifier", status=verdict.get("status") or row["status"],
                          candidate_ms=verdict.get("candidate_ms"), roofline_ms=verdict.get("roofline_ms"),
                          **common))
    return out


def above_roofline(all_timings: list[Timing]) -> list[Timing]:
    return [t for t in all_timings if t.fraction is not None and t.fraction > 1.0]


# ---------------------------------------------------------------------------------------------------
# printing


def pct(value: float | None) -> str:
    # two decimals, so 100.04% does not print as an innocent 100.0%
    return "n/a" if value is None else f"{100 * value:.2f}%"


def ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def listing(all_timings: list[Timing]) -> list[str]:
    """One line per task that has a fraction against either roofline."""
    by_task: dict[tuple[str, str], dict[str, Timing]] = {}
    for t in all_timings:
        by_task.setdefault((t.folder, t.task), {})[t.roofline] = t
    lines = ["| folder | task | status | bound | candidate ms | bench floor ms | % bench floor "
             "| verifier roofline ms | % verifier roofline |", "|---|---|---|---|---:|---:|---:|---:|---:|"]
    for (folder, task), pair in by_task.items():
        bench, verifier = pair["bench"], pair["verifier"]
        if bench.fraction is None and verifier.fraction is None:
            continue
        lines.append(f"| {folder} | {task} | {bench.status} | {bench.bound or 'n/a'} | "
                     f"{ms(bench.candidate_ms or verifier.candidate_ms)} | {ms(bench.roofline_ms)} | "
                     f"{pct(bench.fraction)} | {ms(verifier.roofline_ms)} | {pct(verifier.fraction)} |")
    return lines


def coverage_row(roofline: str, timed: list[Timing]) -> str:
    mine = [t for t in timed if t.roofline == roofline]
    fractions = [t for t in mine if t.fraction is not None]
    ok_without = sum(t.status == "ok" and t.fraction is None for t in mine)
    top = max(fractions, key=lambda t: t.fraction, default=None)
    where = f"{pct(top.fraction)} ({top.task}, {top.folder})" if top else "n/a"
    return (f"| {ROOFLINES[roofline]} | {len(fractions)} | {ok_without} | {where} | "
            f"{len(above_roofline(mine))} |")


def summary(folders: list[BenchFolder], all_timings: list[Timing]) -> list[str]:
    verdicts = sum(len(f.rows) for f in folders)
    lines = ["## Roofline audit", "",
             f"{len(folders)} bench folders, {verdicts} task verdicts checked.", "",
             "| roofline | with a fraction | ok with no roofline | max fraction (task, folder) | above 1.0 |",
             "|---|---:|---:|---|---:|"]
    lines += [coverage_row(roofline, all_timings) for roofline in ROOFLINES]
    over = above_roofline(all_timings)
    if over:
        lines += ["", f"### Above 1.0 ({len(over)})", "",
                  "| roofline | folder | task | status | bound | candidate ms | roofline ms | fraction |",
                  "|---|---|---|---|---|---:|---:|---:|"]
        lines += [f"| {t.roofline} | {t.folder} | {t.task} | {t.status} | {t.bound or 'n/a'} | "
                  f"{ms(t.candidate_ms)} | {ms(t.roofline_ms)} | {pct(t.fraction)} |"
                  for t in sorted(over, key=lambda t: -t.fraction)]
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="*", type=Path, help="bench folders on disk (new runs)")
    parser.add_argument("--no-manifest", action="store_true", help="only the folders given")
    args = parser.parse_args(argv)
    folders = [] if args.no_manifest else [archived_folder(r["where"]) for r in read_manifest()]
    folders += [disk_folder(f) for f in args.folders]
    all_timings = [t for f in folders for t in timings(f)]
    print("\n".join(listing(all_timings) + [""] + summary(folders, all_timings)))
    return 1 if above_roofline(all_timings) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
