"""Trusted batches: many programs of one task judged in one child (trusted_batch.py says what it
checks and what it leaves out), for programs one trusts: the embedded template coder's, when
`mtmc tree record judge=batch` records a tree.

    verdicts = verifier.verify_batch(task, programs)             # one task, one child
    for index, verdict in judge_in_batches(verifier, pairs, 16):  # many tasks, every worker busy
        ...

The main process keeps what a verdict needs beyond the child's report, as for one verdict
(engine.py): the static checks, the task's reference (cached per task), its baselines and the
roofline floor. A batch whose child does not finish (a crash, a hang, out of memory) is judged again
one program at a time through the full protocol, so one bad program costs only its own verdict.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

from mtmc.program import Program
from mtmc.tasks import Task
from mtmc.verify.engine import Engine
from mtmc.verify.judging import Reference, refuse_tf32_beyond_eager, reject, timing_problems
from mtmc.verify.many import BatchError
from mtmc.verify.verdict import Status, Verdict, VerifierError

log = logging.getLogger(__name__)
TRUSTED_BATCH_FLAG = "trusted_batch"  # judged by trusted_batch.py: no sandbox, no anti-cheat instruments
BATCH_ISOLATION = "none (trusted batch)"


def verify_batch(engine: Engine, task: Task, programs: list[Program]) -> list[Verdict]:
    """A verdict for each program, in order."""
    started = time.monotonic()
    verdicts: list[Verdict | None] = [engine.static_verdict(task, p)[1] for p in programs]
    todo = [i for i, v in enumerate(verdicts) if v is None]
    if todo:
        lap = time.monotonic()
        reference = engine.trusted.reference(task, outputs=False)  # the child makes them
        reference_s = round(time.monotonic() - lap, 4)
        job = _job(engine, task, [programs[i] for i in todo], reference)
        outcome, result = engine.pool.run("tree_batch", job, engine.settings.timeout_s * (1 + len(todo)))
        if outcome.status != "done":
            log.warning("%s: a batch of %d programs ended %s %s; judging them one at a time",
                        task.name, len(todo), outcome.status, outcome.detail)
            for i in todo:
                verdicts[i] = _alone(engine, task, programs[i], reference)
            return verdicts
        # each verdict's share of what the batch paid once (the reference's wait, the child's setup)
        share = {"reference": round(reference_s / len(todo), 4),
                 "batch.setup": round(result["setup_s"] / len(todo), 4),
                 "batch.setup_wait": round(result.get("setup_wait_s", 0.0) / len(todo), 4),
                 "batch.setup_host": round(result.get("setup_host_s", 0.0) / len(todo), 4)}
        for i, report in zip(todo, result["results"], strict=True):
            verdicts[i] = _verdict(engine, task, reference, report, share)
    wall = (time.monotonic() - started) / len(programs)  # each verdict's share of the batch
    for verdict in verdicts:
        _finish(engine, verdict, wall)
    return verdicts


def judge_in_batches(verifier: Any, pairs: Iterable[tuple[Task, Program]], chunk: int,
                     stop: Callable[[], bool] | None = None) -> Iterator[tuple[int, Verdict]]:
    """(index into `pairs`, verdict) for every pair: each task's programs in batches of at most `chunk`,
    `verifier.concurrency` batches at once; then many.BatchError for pairs whose task could not be
    judged (VerifierError), as many.judge_concurrently does. A batch that would start once `stop()`
    is true does not: its pairs get no verdict (a recorder's deadline)."""
    if not callable(getattr(verifier, "verify_batch", None)):
        raise VerifierError(f"{type(verifier).__name__} has no verify_batch: trusted batches need the local "
                            "or the interpreter verifier")
    batches = _batches(list(pairs), chunk)
    errors: dict[int, VerifierError] = {}
    with ThreadPoolExecutor(max_workers=max(1, min(verifier.concurrency, len(batches))),
                            thread_name_prefix="mtmc-batch") as pool:
        futures = {pool.submit(_unless_stopped, verifier, task, [p for _, p in members], stop): members
                   for task, members in batches}
        for future in as_completed(futures):
            members = futures[future]
            try:
                verdicts = future.result()
            except VerifierError as err:  # the task's reference cannot run: every pair of the batch
                errors.update({index: err for index, _ in members})
                continue
            if verdicts is None:  # not started: past `stop`
                continue
            yield from ((index, v) for (index, _), v in zip(members, verdicts, strict=True))
    if errors:
        raise BatchError(errors)


def _unless_stopped(verifier: Any, task: Task, programs: list[Program],
                    stop: Callable[[], bool] | None) -> list[Verdict] | None:
    return None if stop is not None and stop() else verifier.verify_batch(task, programs)


def _batches(pairs: list[tuple[Task, Program]], chunk: int) -> list[tuple[Task, list[tuple[int, Program]]]]:
    """Each task's pairs (with their indices) in runs of at most `chunk`, in order of first appearance."""
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1, got {chunk}")
    by_task: dict[str, tuple[Task, list[tuple[int, Program]]]] = {}
    for index, (task, program) in enumerate(pairs):
        by_task.setdefault(task.name, (task, []))[1].append((index, program))
    return [(task, members[start:start + chunk]) for task, members in by_task.values()
            for start in range(0, len(members), chunk)]


def _alone(engine: Engine, task: Task, program: Program, reference: Reference) -> Verdict:
    """A program of a batch that did not finish, judged again by itself: in full; or, in one-GPU mode
    (timing_gpu.py), where the full protocol's comparisons in this process would run kernels outside
    the GPU's lock, as a batch of one in a child of its own (its failure is its own verdict)."""
    if not engine.pool.gpu_lock:
        return engine.verify(task, program)
    outcome, result = engine.pool.run("tree_batch", _job(engine, task, [program], reference),
                                      2 * engine.settings.timeout_s)
    failed = engine.outcome_verdict(outcome, "trusted batch")
    if failed is not None:
        return failed
    return _verdict(engine, task, reference, result["results"][0], {})


def _job(engine: Engine, task: Task, programs: list[Program], reference: Reference) -> dict[str, Any]:
    errors = [{"eager_errors": e.get("eager_errors"), "reference_errors": e.get("reference_errors"),
               "eager_measured": bool(e.get("eager_measured"))} for e in reference.expected]
    return {"task_name": task.name, "task_source": task.source, "inputs_path": reference.inputs_path,
            "device": engine.device_type,
            "programs": [{"source": p.source, "digest": p.digest} for p in programs],
            "errors": errors, "eager_tf32": reference.eager_tf32, "time_it": engine.device_type == "cuda",
            "timing": engine.settings.timing,
            "refuse_tf32": refuse_tf32_beyond_eager(task, engine.settings.tf32_follows_eager)}


def _verdict(engine: Engine, task: Task, reference: Reference, report: dict[str, Any],
             share: dict[str, float]) -> Verdict:
    """The child's report on one program as a verdict; on a GPU with the timing rules and
    engine.judge_speed (baselines, roofline floor, excessive speedup), as engine._judge_gpu does."""
    verdict = Verdict(Status(report["status"]), report["message"], reason=report.get("reason", ""),
                      max_abs_error=report.get("max_abs_error"),
                      rel_error=report.get("rel_error"), flags=[*reference.flags, *report.get("flags", [])],
                      phases_s={**share, **{f"batch.{k}": v for k, v in report.get("phases_s", {}).items()}})
    timing = report.get("timing")
    if not verdict.ok or timing is None:
        return verdict
    mine = timing["timings"]["candidate"]
    problem = timing_problems(mine, timing)
    if problem:
        return reject(verdict, problem)
    verdict.candidate_ms, verdict.candidate_median_ms = mine["reported_ms"], mine["median_ms"]
    engine.judge_speed(task, reference, verdict)
    return verdict


def _finish(engine: Engine, verdict: Verdict, wall_s: float) -> None:
    if TRUSTED_BATCH_FLAG in verdict.flags or verdict.isolation:  # judged alone after a failed batch
        return
    verdict.flags.append(TRUSTED_BATCH_FLAG)
    engine.stamp(verdict, BATCH_ISOLATION, wall_s)
