"""Is any benchmarked task faster than its roofline? (issue 25, Show 5)

    python benchmarks/roofline_audit.py                         # every folder of the manifest
    python benchmarks/roofline_audit.py <bench folder> [...]    # and these folders on disk (new runs)
    python benchmarks/roofline_audit.py --no-manifest <bench folder> [...]
    python benchmarks/roofline_audit.py [<bench folder> ...] --recompute --tasks <task folder> [...]

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

--recompute: the stored floors are the code's of their day (measured copy bandwidth; earlier still,
fp32 convolutions at the fp32 FMA rate), so each timed row's two floors are also recomputed with
today's code, both as the bench and the verifier compute them: `floor_ms(summarize(task), task,
calibration of the row's GPU)` and `roofline_ms(matmul FLOPs, bytes, half, peaks_for(GPU))`, the task
summarized at its first case's sizes (the file's own, as mtmc/verify/engine.py `_judge_roofline`).
Built-in tasks load by name; KernelBench tasks by file stem from the --tasks folders (and the folder
results.json names as its suite, where it exists here). A row whose task cannot be loaded or
summarized, whose GPU has no calibration or peaks, or whose task has changed since the run (its
compulsory bytes differ from the row's `bytes`) is listed as not recomputed, with the reason. The
exit status is then the recomputed floors': 1 if any recomputed fraction is above 1.0.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository: benchmarks/ is not installed

from benchmarks.kb_families import rows_of  # noqa: E402
from benchmarks.manifest import ROOT, read_manifest  # noqa: E402

ROOFLINES = {
    "bench": "bench floor (results.json `floor_ms`: the tables' % roofline)",
    "verifier": "verifier (`roofline_ms` of the verdict in <task>/result.json)",
}
RECOMPUTED = {  # --recompute: each stored roofline, computed again with today's code
    "bench now": "bench floor, today's (mtmc/bench/roofline.py `floor_ms`)",
    "verifier now": "verifier, today's (mtmc/verify/hardware.py `roofline_ms`)",
}
NOW = {"bench": "bench now", "verifier": "verifier now"}
NAMED_SUITES = ("builtin", "variants")  # suites of task names (mtmc/tasks/loader.py), not folders
RESULTS_PREFIX = "benchmarks/results/"


@dataclass
class BenchFolder:
    name: str
    rows: list[dict]  # results.json's task rows
    verdict_of: Callable[[str], dict | None]  # a task's final verdict, None without a result.json
    suite: str | None = None  # results.json's meta: `builtin`, or the task folder the run read


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

    results = json.loads(git("show", f"{commit}:{path}/results.json"))
    return BenchFolder(path.removeprefix(RESULTS_PREFIX), results["tasks"], verdict_of,
                       results.get("meta", {}).get("suite"))


def disk_folder(folder: Path) -> BenchFolder:
    """A bench folder on disk; a run cut off before its report still has its tasks' bench.json."""
    def verdict_of(task: str) -> dict | None:
        result = folder / task / "result.json"
        return json.loads(result.read_text())["verdict"] if result.is_file() else None

    results = folder / "results.json"  # a run cut off before its report names no suite
    suite = json.loads(results.read_text()).get("meta", {}).get("suite") if results.is_file() else None
    return BenchFolder(str(folder), rows_of(folder), verdict_of, suite)


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
# --recompute: today's floors


class NotRecomputed(Exception):
    """Why a row's floor could not be recomputed (its message: the reason, as listed)."""


@dataclass
class Skipped:
    timing: Timing  # the recomputed timing, with no roofline
    reason: str


class TodaysFloors:
    """Today's bench floor and verifier roofline of archived rows, each task loaded and summarized once."""

    def __init__(self, task_dirs: list[Path]) -> None:
        # imported here: the plain audit reads json only, and needs no torch
        from mtmc.bench.roofline import load_calibrations
        self.task_dirs = task_dirs
        self.calibrations = load_calibrations("auto")
        self.summaries: dict[str, tuple | str] = {}  # task reference -> (task, summary), or why not

    def task_ref(self, name: str, suite: str | None) -> str:
        """A built-in (or variant) name, or the path of the task's file."""
        if suite is not None and suite.partition(":")[0] in NAMED_SUITES:
            return name
        dirs = list(self.task_dirs)
        if suite is not None:  # the suite's own folder first, where it is here (cwd, or the repository)
            dirs = [d for d in (Path(suite), ROOT / suite) if d.is_dir()][:1] + dirs
        found = next((d / f"{name}.py" for d in dirs if (d / f"{name}.py").is_file()), None)
        if found is not None:
            return str(found)
        if suite is None:  # a folder cut off before its report: it may have been a built-in run
            return name
        raise NotRecomputed(f"{name}.py is in no --tasks folder (suite {suite})")

    def summarized(self, name: str, suite: str | None) -> tuple:
        """(task, its summary at the first case's sizes); raises NotRecomputed."""
        from mtmc.tasks import load_task, summarize
        ref = self.task_ref(name, suite)
        if ref not in self.summaries:
            try:
                task = load_task(ref)
                # the first case's sizes, as the verifier's (engine.py `_judge_roofline`) and the bench's
                self.summaries[ref] = (task, summarize(task, task.sizes("cuda")[0]))
            except Exception as err:  # a task that no longer loads, an op without a meta kernel
                first = (str(err).strip().splitlines() or [""])[0]
                self.summaries[ref] = f"loading or summarizing {ref} failed: {type(err).__name__}: {first}"
        held = self.summaries[ref]
        if isinstance(held, str):
            raise NotRecomputed(held)
        return held

    def floor(self, roofline: str, task, summary, device: str) -> tuple[float, str]:
        """(today's floor in ms, its bound) of `roofline` ("bench" or "verifier"); raises NotRecomputed."""
        from mtmc.bench.roofline import floor_ms, pick
        from mtmc.verify.hardware import peaks_for, roofline_ms
        if roofline == "bench":
            calibration = pick(self.calibrations, device)
            if calibration is None:
                raise NotRecomputed(f"no calibration for {device} (mtmc/bench/calibrations)")
            floor, bound = floor_ms(summary, task, calibration)
            if floor is None:
                raise NotRecomputed(f"the calibration for {device} lacks the rate of the task's math")
            return floor, bound
        peaks = peaks_for(device)
        if peaks is None:
            raise NotRecomputed(f"no datasheet peaks for {device} (mtmc/verify/hardware.py)")
        # as the engine's `_judge_roofline`: 16-bit math where any input or output is 16-bit
        half = any(t.dtype in {"float16", "bfloat16"} for t in summary.inputs + summary.outputs)
        flops = peaks.flops_fp16 if half else peaks.flops_fp32
        compute = summary.matmul_flops / flops > summary.bytes_min / peaks.bandwidth_max
        return roofline_ms(summary.matmul_flops, summary.bytes_min, half, peaks), \
            "compute" if compute else "memory"

    def row(self, folder: BenchFolder, row: dict, stored: list[Timing]) -> tuple[list[Timing], list[Skipped]]:
        """The row's timed stored timings again, against today's floors: (recomputed, not recomputed)."""
        done, skipped = [], []
        timed = [t for t in stored if t.candidate_ms]  # untimed (an error, CPU): no fraction either way
        if not timed:
            return done, skipped
        device = row.get("device") or (folder.verdict_of(row["task"]) or {}).get("device")
        for t in timed:
            now = replace(t, roofline=NOW[t.roofline], roofline_ms=None)
            try:
                if not device:
                    raise NotRecomputed("no GPU on record (the row's device, the verdict's)")
                task, summary = self.summarized(row["task"], folder.suite)
                if row.get("bytes") is not None and row["bytes"] != summary.bytes_min:
                    raise NotRecomputed(f"the task changed since the run: {row['bytes']} compulsory bytes "
                                        f"then, {summary.bytes_min} now")
                now.roofline_ms, now.bound = self.floor(t.roofline, task, summary, device)
                done.append(now)
            except NotRecomputed as why:
                skipped.append(Skipped(now, str(why)))
        return done, skipped


def recompute(folders: list[BenchFolder], their_timings: list[list[Timing]], task_dirs: list[Path]
              ) -> tuple[list[Timing], list[Skipped]]:
    """Every timed row of `folders` (`their_timings`: each folder's `timings`) against today's floors:
    (recomputed timings, those not recomputed)."""
    floors = TodaysFloors(task_dirs)
    done, skipped = [], []
    for folder, stored in zip(folders, their_timings, strict=True):
        for i, row in enumerate(folder.rows):  # `timings` gives each row's pair in row order
            d, s = floors.row(folder, row, stored[len(ROOFLINES) * i:len(ROOFLINES) * (i + 1)])
            done += d
            skipped += s
    return done, skipped


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


def coverage_row(roofline: str, timed: list[Timing], labels: dict[str, str]) -> str:
    mine = [t for t in timed if t.roofline == roofline]
    fractions = [t for t in mine if t.fraction is not None]
    ok_without = sum(t.status == "ok" and t.fraction is None for t in mine)
    top = max(fractions, key=lambda t: t.fraction, default=None)
    where = f"{pct(top.fraction)} ({top.task}, {top.folder})" if top else "n/a"
    return (f"| {labels[roofline]} | {len(fractions)} | {ok_without} | {where} | "
            f"{len(above_roofline(mine))} |")


def coverage(all_timings: list[Timing], labels: dict[str, str]) -> list[str]:
    """Each roofline's count, max fraction and count above 1.0; then every timing above 1.0."""
    lines = ["| roofline | with a fraction | ok with no roofline | max fraction (task, folder) | above 1.0 |",
             "|---|---:|---:|---|---:|"]
    lines += [coverage_row(roofline, all_timings, labels) for roofline in labels]
    over = above_roofline(all_timings)
    if over:
        lines += ["", f"### Above 1.0 ({len(over)})", "",
                  "| roofline | folder | task | status | bound | candidate ms | roofline ms | fraction |",
                  "|---|---|---|---|---|---:|---:|---:|"]
        lines += [f"| {t.roofline} | {t.folder} | {t.task} | {t.status} | {t.bound or 'n/a'} | "
                  f"{ms(t.candidate_ms)} | {ms(t.roofline_ms)} | {pct(t.fraction)} |"
                  for t in sorted(over, key=lambda t: -t.fraction)]
    return lines


def summary(folders: list[BenchFolder], all_timings: list[Timing]) -> list[str]:
    verdicts = sum(len(f.rows) for f in folders)
    return ["## Roofline audit", "", f"{len(folders)} bench folders, {verdicts} task verdicts checked.", "",
            *coverage(all_timings, ROOFLINES)]


def recomputed_listing(all_timings: list[Timing], now: list[Timing]) -> list[str]:
    """One line per recomputed task: each floor as stored (then) and as today's code computes it (now)."""
    then = {(t.folder, t.task, NOW[t.roofline]): t.roofline_ms for t in all_timings}
    by_task: dict[tuple[str, str], dict[str, Timing]] = {}
    for t in now:
        by_task.setdefault((t.folder, t.task), {})[t.roofline] = t
    lines = ["| folder | task | status | bound now | candidate ms | bench floor ms then | now | % now "
             "| verifier roofline ms then | now | % now |",
             "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for (folder, task), pair in by_task.items():
        cells = []
        for roofline in RECOMPUTED:
            t = pair.get(roofline)
            cells += [ms(then[(folder, task, roofline)]), ms(t and t.roofline_ms), pct(t and t.fraction)]
        first = pair.get("bench now") or pair["verifier now"]
        lines.append(f"| {folder} | {task} | {first.status} | {first.bound or 'n/a'} | "
                     f"{ms(first.candidate_ms)} | {' | '.join(cells)} |")
    return lines


def recomputed_summary(now: list[Timing], skipped: list[Skipped]) -> list[str]:
    tasks = {(t.folder, t.task) for t in now} | {(s.timing.folder, s.timing.task) for s in skipped}
    below = " (listed below)" if skipped else ""
    lines = ["## Roofline audit at today's floors (--recompute)", "",
             f"{len(tasks)} timed tasks, {len(now) + len(skipped)} timed fractions (a task without a verdict "
             f"has no verifier one): {len(now)} recomputed, {len(skipped)} not recomputed{below}.", "",
             *coverage(now + [s.timing for s in skipped], RECOMPUTED)]
    if skipped:
        lines += ["", f"### Not recomputed ({len(skipped)})", "",
                  "| roofline | folder | task | status | candidate ms | reason |",
                  "|---|---|---|---|---:|---|"]
        lines += [f"| {s.timing.roofline} | {s.timing.folder} | {s.timing.task} | {s.timing.status} | "
                  f"{ms(s.timing.candidate_ms)} | {s.reason} |" for s in skipped]
    return lines


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="*", type=Path, help="bench folders on disk (new runs)")
    parser.add_argument("--no-manifest", action="store_true", help="only the folders given")
    parser.add_argument("--recompute", action="store_true",
                        help="also each row's floors with today's code; the exit status is theirs")
    parser.add_argument("--tasks", nargs="+", type=Path, default=[], metavar="FOLDER",
                        help="for --recompute: folders of KernelBench task files, matched by file stem")
    args = parser.parse_args(argv)
    for tasks in args.tasks:  # --tasks takes every word after it: a bench folder there would go unread
        if not any(tasks.glob("*.py")):
            parser.error(f"--tasks {tasks}: no task files (*.py) there; bench folders go before --tasks")
    folders = [] if args.no_manifest else [archived_folder(r["where"]) for r in read_manifest()]
    folders += [disk_folder(f) for f in args.folders]
    their_timings = [timings(f) for f in folders]
    all_timings = [t for ts in their_timings for t in ts]
    print("\n".join(listing(all_timings) + [""] + summary(folders, all_timings)))
    if not args.recompute:
        return 1 if above_roofline(all_timings) else 0
    now, skipped = recompute(folders, their_timings, args.tasks)
    print("\n".join(["", *recomputed_listing(all_timings, now), "", *recomputed_summary(now, skipped)]))
    return 1 if above_roofline(now) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
