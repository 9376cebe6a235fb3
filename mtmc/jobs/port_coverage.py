"""`mtmc tasks check=port`: which tasks of a suite the template coder can port, and why not.

    rows = [port_row(entry) for entry in scan_suite(suite)]   # one row per task file, broken ones too
    report = coverage_report(rows, suite)                      # the rows, "N of M port", reason counts

A row says whether `TemplateCoder().apply(task, None, PORT)` gives a program that imports and whose
`ModelNew` builds as the verifier builds it, how many Triton kernels it has and whether a
vendor-library call (a conv the task allows) is left in it, or the one-line reason it does not.
Porting traces the reference on meta tensors and the program's model is built on the meta device:
no task runs at its sizes, and no kernel is compiled (that takes a GPU or the interpreter: `mtmc bench`).
"""

from __future__ import annotations

import importlib.util
import re
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from mtmc.strategies import PORT
from mtmc.tasks import BrokenTask, Task
from mtmc.tasks.task import on_meta

UNSUPPORTED = "not supported by the template coder: "  # the template coder's CoderError prefix


def port_row(entry: Task | BrokenTask) -> dict[str, Any]:
    """One task's port outcome; any error (a broken file, a coder bug) is a row, never raised."""
    from coders.template import TemplateCoder  # the job's only user of the template coder

    if isinstance(entry, BrokenTask):
        return _row(entry.name, entry.path, False, f"TaskError: {entry.error}", 0.0)
    start = time.monotonic()
    try:
        program = TemplateCoder().apply(entry, None, PORT)
    except Exception as err:  # CoderError: unsupported; anything else is a coder bug worth a row too
        reason = f"{type(err).__name__}: {str(err).removeprefix(UNSUPPORTED)}"
        return _row(entry.name, entry.path, False, reason, time.monotonic() - start)
    problem = load_problem(entry, program.source)
    if problem:
        return _row(entry.name, entry.path, False, f"LoadError: {problem}", time.monotonic() - start)
    steps = program.metadata["template_ir"]["steps"]  # the serialized IR travels with the program
    row = _row(entry.name, entry.path, True, "", time.monotonic() - start)
    row["kernels"] = sum(step["step"] == "kernel" for step in steps)
    row["library"] = any(step.get("library") for step in steps)
    return row


def load_problem(task: Task, source: str) -> str:
    """'' when the program imports from a file (as the verifier imports it: Triton reads a kernel's
    source from its file) and its ModelNew builds from the task's init inputs on the meta device;
    else the one-line reason. The template coder's own output, so it runs here, unsandboxed."""
    name = f"mtmc_port_check_{re.sub(r'[^0-9A-Za-z_]', '_', task.name)}"
    with tempfile.TemporaryDirectory(prefix="mtmc-port-") as folder:
        path = Path(folder) / f"{name}.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses and pickling look modules up by name
        try:
            spec.loader.exec_module(module)
            on_meta(lambda: module.ModelNew(*task.init_inputs()))
        except Exception as err:
            return f"{type(err).__name__}: {err}"
        finally:
            sys.modules.pop(name, None)
    return ""


def _row(name: str, path: str | None, ok: bool, reason: str, seconds: float) -> dict[str, Any]:
    reason = " ".join(reason.split())  # one line, whatever the message held
    return {"task": name, "path": path, "port": "ok" if ok else "failed", "reason": reason,
            "group": reason_group(reason) if reason else "", "kernels": None, "library": None,
            "seconds": round(seconds, 2)}


def reason_group(reason: str) -> str:
    """The reason without its particulars, so one cause over many tasks counts as one row:
    `CoderError: module ConvTranspose2d` for every size, `TaskError` without the file's path."""
    kind, _, text = reason.partition(": ")
    if kind == "TaskError":
        text = text.partition(": ")[2] or text  # TaskError messages start with the file's path
    text = re.sub(r" \(.*\)$", "", text)  # a trailing parenthesis holds the details
    text = re.sub(r"\b\d+\b", "N", text)  # sizes, counts, line numbers; not the 2 of Conv2d
    text = text.partition(" While executing ")[0]  # an fx interpreter error appends the whole node
    return f"{kind}: {text}"


def coverage_report(rows: list[dict[str, Any]], suite: str) -> dict[str, Any]:
    ported = sum(row["port"] == "ok" for row in rows)
    groups = Counter(row["group"] for row in rows if row["port"] != "ok")
    return {"suite": suite, "ported": ported, "total": len(rows),
            "summary": f"{ported} of {len(rows)} tasks port ({suite})",
            "reasons": [{"reason": group, "count": count} for group, count in groups.most_common()],
            "tasks": rows}
