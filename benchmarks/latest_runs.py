"""Every KernelBench task of a suite at its latest bench run, from the manifest (BENCHMARKS.md's
"each task at its latest run"): tasks are benched again across sessions, and no one folder holds them all.

    python benchmarks/latest_runs.py --suite .kb/l2 [--families conv,conv-transpose] [--tasks]
        [--export DIR] [--json PATH] [--repo PATH]

The manifest's folders of the suite (benchmarks/results.csv) are read from the commits that archived
them (`where`), oldest first: by date, then by the committer time of the commit measured, since a day
holds several sessions and the manifest orders a day by folder name. A commit git does not know sorts
first within its day (with a warning); folders of one commit keep the manifest's order. Each task keeps
the row of its latest folder, but a row that stopped on an interrupt (kb_families.interrupted: no
verdict on its program) does not replace an earlier one. A folder missing from the history is reported
and skipped.

Prints kb_families' cells per family and for all the selected families (--tasks: also one row per
task, by speedup over torch.compile, worst first). --export DIR lays the latest programs out as a bench
folder (<task>/kernel.py, <task>/bench.json) for `benchmarks/kb_eval.py --bench DIR`; --json PATH writes
the latest rows, each with its folder's `where` and measured `commit`. Git runs in --repo (default: the
working directory), whose benchmarks/results.csv is the manifest read.

A bench folder cut off before its report (a call's deadline) has no results.json and so no manifest
row, but its task folders' bench.json hold verdicts: `--unlisted <archive commit>:benchmarks/results/
<folder>@<commit measured>` (repeatable) adds one, dated by the measured commit's committer date.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository: benchmarks/ is not installed

from benchmarks.kb_families import family, interrupted, summarize  # noqa: E402
from benchmarks.manifest import read_manifest  # noqa: E402

MANIFEST = Path("benchmarks") / "results.csv"
RESULTS_PREFIX = "benchmarks/results/"


@dataclass(frozen=True)
class Latest:
    """A task's row at its latest run, and the run it is from."""
    row: dict  # the task's row in the folder's results.json
    where: str  # the manifest's `where`: <archive commit>:benchmarks/results/<folder>
    commit: str  # the commit measured

    @property
    def task(self) -> str:
        return self.row["task"]

    @property
    def folder(self) -> str:
        return self.where.split(":", 1)[1].removeprefix(RESULTS_PREFIX)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout


def warn(message: str) -> None:
    print(message, file=sys.stderr)


def committed_at(repo: Path, commit: str) -> int:
    """The commit's committer time; -1 (first within its day) for a commit git does not know."""
    try:
        return int(git(repo, "log", "-1", "--format=%ct", commit, "--"))
    except (subprocess.CalledProcessError, ValueError):
        warn(f"commit {commit or '(none)'} is not in the repository: its folders sort first within their day")
        return -1


def unlisted_run(repo: Path, spec: str) -> dict[str, str]:
    """A folder with no manifest row, `<archive commit>:<path>@<commit measured>`, as a manifest row."""
    where, _, measured = spec.rpartition("@")
    if not where or ":" not in where:
        raise SystemExit(f"--unlisted {spec!r}: expected <archive commit>:<path>@<commit measured>")
    try:
        date = git(repo, "log", "-1", "--format=%cs", measured, "--").strip()
    except subprocess.CalledProcessError:
        raise SystemExit(f"--unlisted {spec!r}: commit {measured} is not in the repository") from None
    return {"date": date, "commit": measured, "where": where}


def runs_in_order(repo: Path, suite: str, unlisted: list[str] = ()) -> list[dict[str, str]]:
    """The manifest's rows of `suite` and the unlisted folders, oldest first (sorted is stable: ties
    keep the manifest's order)."""
    runs = [r for r in read_manifest(repo / MANIFEST) if r["suite"] == suite]
    runs += [unlisted_run(repo, spec) for spec in unlisted]
    # many folders share a commit: ask git, and warn, once per commit
    when = {commit: committed_at(repo, commit) for commit in dict.fromkeys(r["commit"] for r in runs)}
    return sorted(runs, key=lambda r: (r["date"], when[r["commit"]]))


def archived_rows(repo: Path, where: str) -> list[dict] | None:
    """The task rows of a folder's results.json, read from its archive commit, or for a run cut off
    before its report its task folders' bench.json rows (kb_families.rows_of on the archive); None if
    the folder is absent."""
    commit, path = where.split(":", 1)
    try:
        return json.loads(git(repo, "show", f"{commit}:{path}/results.json"))["tasks"]
    except subprocess.CalledProcessError:
        pass
    try:
        names = git(repo, "ls-tree", "--name-only", f"{commit}:{path}").split()
    except subprocess.CalledProcessError:
        return None
    rows = []
    for name in names:
        try:
            rows.append(json.loads(git(repo, "show", f"{commit}:{path}/{name}/bench.json"))["row"])
        except subprocess.CalledProcessError:
            continue  # not a task folder
    return rows


def latest_rows(repo: Path, suite: str, unlisted: list[str] = ()) -> dict[str, Latest]:
    """Each task of the suite at its latest run."""
    latest: dict[str, Latest] = {}
    for run in runs_in_order(repo, suite, unlisted):
        rows = archived_rows(repo, run["where"])
        if rows is None:
            warn(f"{run['where']}: not in the repository's history; skipped")
            continue
        for row in rows:
            if interrupted(row) and row["task"] in latest:
                continue  # an interrupt is no verdict: the earlier run's stands
            latest[row["task"]] = Latest(row, run["where"], run["commit"])
    return latest


def selected(latest: dict[str, Latest], families: list[str] | None) -> list[Latest]:
    """The latest rows of the families asked for (all without a list), by task name."""
    return [latest[t] for t in sorted(latest) if families is None or family(t) in families]


def times(value: float | None) -> str:
    return f"{value:.2f}x" if value else "n/a"


def family_table(latest: list[Latest]) -> list[str]:
    """kb_families' cells per family, then for all of them; >= 1.0x counts correct tasks only."""
    by_family: dict[str, list[dict]] = {}
    for item in latest:
        by_family.setdefault(family(item.task), []).append(item.row)
    lines = ["| family | tasks | correct | geomean x eager | geomean x compile | >= 1.0x compile |",
             "|---|---:|---:|---:|---:|---:|"]
    for name in sorted(by_family) + ["all"]:
        rows = sum(by_family.values(), []) if name == "all" else by_family[name]
        s = summarize(rows)
        wins = sum(1 for r in rows if r["correct"] and (r.get("speedup_compiled") or 0) >= 1.0)
        lines.append(f"| {name} | {s['tasks']} | {s['correct']} | {times(s['eager'])} "
                     f"| {times(s['compiled'])} | {wins} |")
    return lines


def task_table(latest: list[Latest]) -> list[str]:
    """One row per task, worst speedup over torch.compile first (untimed rows before all)."""
    lines = ["| task | folder | commit | correct | x eager | x compile |", "|---|---|---|---|---:|---:|"]
    for item in sorted(latest, key=lambda i: i.row.get("speedup_compiled") or 0.0):
        r = item.row
        lines.append(f"| {item.task} | {item.folder} | {item.commit[:7]} | {r['correct']} "
                     f"| {times(r.get('speedup_eager'))} | {times(r.get('speedup_compiled'))} |")
    return lines


def export(repo: Path, latest: list[Latest], out: Path) -> int:
    """Each latest program and its row as a bench folder: <out>/<task>/kernel.py and bench.json.
    Returns how many were written; a row whose program is not in the archive is skipped with a note."""
    written = 0
    for item in latest:
        commit, path = item.where.split(":", 1)
        kernel = item.row.get("kernel") or f"{item.task}/kernel.py"  # a row with no program names none
        try:
            program = git(repo, "show", f"{commit}:{path}/{kernel}")
        except subprocess.CalledProcessError:
            warn(f"{item.task}: no program at {item.where}/{kernel} (status {item.row['status']}); "
                 "not exported")
            continue
        (out / item.task).mkdir(parents=True, exist_ok=True)
        (out / item.task / "kernel.py").write_text(program)
        # the bench's own layout (mtmc/bench/run.py): kb_eval's our_row reads bench.json's "row"
        (out / item.task / "bench.json").write_text(json.dumps({"row": item.row}, indent=2) + "\n")
        written += 1
    return written


def as_json(suite: str, latest: list[Latest]) -> str:
    rows = [item.row | {"where": item.where, "commit": item.commit} for item in latest]
    return json.dumps({"suite": suite, "tasks": rows}, indent=1) + "\n"


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--suite", required=True, help="the manifest's suite, e.g. .kb/l2")
    parser.add_argument("--families", help="comma-separated kb_families families (default: all)")
    parser.add_argument("--tasks", action="store_true", help="also one row per task")
    parser.add_argument("--export", type=Path, help="write the latest programs here as a bench folder")
    parser.add_argument("--json", type=Path, help="write the latest rows here")
    parser.add_argument("--repo", type=Path, default=Path.cwd(), help="the repository (default: here)")
    parser.add_argument("--unlisted", action="append", default=[],
                        help="<archive commit>:<path>@<commit measured>: a cut-off run, no manifest row")
    args = parser.parse_args(argv)
    families = args.families.split(",") if args.families else None
    latest = selected(latest_rows(args.repo, args.suite, args.unlisted), families)
    print(f"{args.suite}, each task at its latest run ({', '.join(families or ['all families'])}):\n")
    print("\n".join(family_table(latest)))
    if args.tasks:
        print("\n" + "\n".join(task_table(latest)))
    if args.export:
        written = export(args.repo, latest, args.export)
        print(f"\nexported {written} of {len(latest)} programs to {args.export}")
    if args.json:
        args.json.write_text(as_json(args.suite, latest))


if __name__ == "__main__":
    main(sys.argv[1:])
