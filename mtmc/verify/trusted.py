"""The verifier's trusted children, made once per task: the reference (its outputs on every case,
kept in this process for the latest tasks) and the baselines (eager and torch.compile, timed).

Threads judging one task wait for its reference and baselines; other tasks' are made at the same
time, on other workers (a verifier with several workers judges several tasks at once). With
`verifier.overlap_baselines` a task's baselines are made while its reference runs (overlap.py).
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
import threading
import time
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from mtmc.tasks import Task
from mtmc.verify import overlap
from mtmc.verify.integrity import Seal
from mtmc.verify.judging import Reference
from mtmc.verify.pristine import new_key
from mtmc.verify.protocol import case_bytes, derived_size, small_size
from mtmc.verify.verdict import VerifierError
from mtmc.verify.worker_pool import WorkerPool

if TYPE_CHECKING:
    from mtmc.verify.engine import Settings

REFERENCES_KEPT = 8  # tasks whose reference outputs stay in memory (mapped from RAM-backed files)...
REFERENCE_BYTES_KEPT = 16 * 2**30  # ...as long as they fit in this; the latest is always kept


class TrustedRuns:
    def __init__(self, pool: WorkerPool, settings: Settings, device_type: str, seal: Seal,
                 base_seed: int) -> None:
        self.pool, self.settings, self.device_type, self.seal = pool, settings, device_type, seal
        self.base_seed = base_seed
        self._size_rng = random.Random(settings.seed) if settings.seed is not None else random.SystemRandom()
        self._references: OrderedDict[str, Reference] = OrderedDict()
        self._outlines: dict[str, Reference] = {}  # references let go of, without their outputs
        self._baselines: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()  # the tables above; each task's jobs have their own (_task_lock)
        self._task_locks: dict[tuple[str, str], threading.Lock] = {}

    def reference(self, task: Task, outputs: bool = True) -> Reference:
        """The task's reference outputs on every case (made once, kept for the latest tasks).
        `outputs=False` (trusted batches, which make the outputs in their own child): a task whose
        outputs were let go is not run again; its outline serves (outline())."""
        key = hashlib.sha256(task.source.encode()).hexdigest()
        with self._task_lock("reference", key):  # each task's once; other tasks' at the same time
            with self._lock:
                if key in self._references:
                    self._references.move_to_end(key)
                    return self._references[key]
                if not outputs and key in self._outlines:
                    return self._outlines[key]
            reference = self._new_reference(task, key)
            with self._lock:
                self._references[key] = reference
                while len(self._references) > 1 and (
                        len(self._references) > REFERENCES_KEPT
                        or sum(r.nbytes for r in self._references.values()) > REFERENCE_BYTES_KEPT):
                    gone, dropped = self._references.popitem(last=False)
                    self._outlines[gone] = outline(dropped)
            return reference

    def _new_reference(self, task: Task, key: str) -> Reference:
        size_sets = task.sizes(self.device_type)
        derived = derived_size(task, size_sets[0], self._size_rng) if len(size_sets) == 1 else None
        full = [(sizes, self._seeds(j)) for j, sizes in enumerate(size_sets)]
        # (cases, the size drawn for them, the plan's note, the flag if the reference fails there),
        # the first whose reference runs is used.
        plans = [self._large_plan(task, size_sets)]
        if derived:
            plans.append((full + [(derived, 1)], derived, "", "no_derived_size: {}; checked at the "
                          "declared size only"))
        plans = [p for p in plans if p is not None] + [(full, None, "", "")]
        flags: list[str] = []
        overlap_first = self._overlaps(key)
        for plan, drawn, note, fails in plans:
            try:
                reference = self._run_reference(task, key, plan, overlap_first)
                overlap_first = False
                reference.plan = note
                break
            except VerifierError as err:
                overlap_first = False
                if drawn is None:
                    raise
                why = str(err).splitlines()[0][:200]
                flags.append(fails.format(f"the reference fails at {drawn} ({why})"))
        reference.flags += flags + ([f"large_case_plan: {reference.plan}"] if reference.plan else [])
        self.seal.add_file(reference.inputs_path)  # what every candidate regenerates its inputs from
        if task.path:
            self.seal.add_file(task.path)
        return reference

    def _large_plan(self, task: Task, size_sets: list[dict[str, Any]]) -> tuple[list, dict, str, str] | None:
        """The large-case plan, or None: when one case's inputs or outputs at the first size exceed
        `large_case_bytes`, every such byte travels several times per verdict: the outputs from each
        child to this process and back to the GPU to be compared (issue 25), the inputs, parked in
        host memory past the device's share (case_io.RESIDENT_SHARE), into the device at every call
        of the candidate's job, its timing loop's included (45_Average_Pooling_2D: 16 GiB of inputs
        a case, 0.13 GiB of outputs; on the full plan, three such cases and a derived one took its
        candidate job past the 120 s limit on an H100).
        So that size gets one seed (secret, like every seed) and the others go to a small size drawn
        with the verifier's secret randomness (protocol.small_size; odd constants, as the derived size
        it replaces), whose inputs and outputs each fit an eighth of the budget. The elementwise
        comparison is the same on every case; what shrinks is the number of full-size samples."""
        budget = self.settings.large_case_bytes
        nbytes = case_bytes(task, size_sets[0]) if budget else None
        if nbytes is None or max(nbytes) <= budget:
            return None
        small = small_size(task, size_sets[0], self._size_rng, budget // 8)
        if small is None:
            return None
        seeds = self.settings.seeds
        plan = [(size_sets[0], 1)] + [(sizes, 1) for sizes in size_sets[1:]] + [(small, seeds)]
        side = "inputs" if nbytes[0] >= nbytes[1] else "outputs"
        note = (f"1 seed at the declared size ({max(nbytes) / 2**30:.1f} GiB of {side} a case, over the "
                f"{budget / 2**30:.3g} GiB budget), {seeds} at the smaller size {small}")
        return plan, small, note, "no_small_size: {}; checked at full size on every seed"

    def _task_lock(self, kind: str, key: str) -> threading.Lock:
        """One lock per task and kind of trusted job: threads judging one task wait for its reference
        (or baselines) to be made once, while other tasks' are made at the same time."""
        with self._lock:
            return self._task_locks.setdefault((kind, key), threading.Lock())

    def _run_reference(self, task: Task, key: str, plan: list[tuple[dict[str, Any], int]],
                       overlapped: bool = False) -> Reference:
        """The reference on every case of `plan`, (sizes, seeds) pairs: the task's size sets, and
        a derived or a small size drawn by the verifier (protocol.py). `overlapped`: with the task's
        baselines made beside it (overlap.py), else (or where that fails) alone."""
        seed = self.base_seed
        cases = [{"sizes": sizes, "model_seed": seed + i, "input_seed": seed + 5000 + i, "mode": task.mode}
                 for sizes, seeds in plan for i in range(seeds)]
        # Timed on a GPU: the first size's cases, each its own input set (see timing.py).
        timing_sets = [i for i, c in enumerate(cases) if c["sizes"] == cases[0]["sizes"]] \
            if self.device_type == "cuda" else None
        folder = self.pool.data_dir(f"reference-{key[:16]}")
        inputs_path = str(folder / "inputs.pt")
        args = {"task_name": task.name, "task_source": task.source, "cases": cases,
                "device": self.device_type, "inputs_path": inputs_path, "timing_sets": timing_sets,
                "check_key": new_key()}  # the inputs' checksum key (pristine.py): this process's secret
        made = self._overlapped(task, key, args) if overlapped else None
        if made is not None:
            return made
        outcome, result = self.pool.run("reference", args, self.settings.timeout_s)
        if outcome.status != "done":
            raise VerifierError(f"{task.where}: running the reference failed ({outcome.status} "
                                f"{outcome.detail}):\n{outcome.log_tail}")
        return _reference(args, result)

    def _overlaps(self, key: str) -> bool:
        """Whether the task's reference is made with its baselines beside it (overlap.py)."""
        with self._lock:
            made = key in self._baselines
        return (self.settings.overlap_baselines and self.settings.baselines and self.device_type == "cuda"
                and not made)

    def _overlapped(self, task: Task, key: str, args: dict[str, Any]) -> Reference | None:
        """The reference made while the baseline job compiles, then the baselines timed alone
        (overlap.py); the baselines are kept for the task. None: run the reference again alone (the
        pool has no lanes, the overlapped job failed, or a float64 floor of it failed, which beside
        the baseline may have been for want of room: the verdict must be the sequential one's)."""
        started = time.monotonic()
        baseline_args = {**self._baseline_args(task, args["inputs_path"]), "case": args["cases"][0]}
        ran = overlap.reference_and_baseline(self.pool, args, self.settings.timeout_s, baseline_args,
                                             self.settings.baseline_timeout_s)
        if ran is None:
            return None
        wall = round(time.monotonic() - started, 4)
        outcome, result = ran.baseline or (None, None)
        if outcome is not None and outcome.status == "done" and not result.get("aborted"):
            baseline = self._baseline_result(result)
            baseline["phases_s"]["after_reference"] = ran.tail_s  # what waited for it, alone
            with self._lock:
                self._baselines.setdefault(key, baseline)
        outcome, result = ran.reference
        if outcome.status != "done" or result.get("floor_failures"):
            return None
        reference = _reference(args, result)
        reference.phases_s["overlap_wall"] = wall  # reference and baselines, from start to both ends
        return reference

    def _seeds(self, size_index: int) -> int:
        # GPU sizes are GBs of outputs per case: the first size gets every seed (its cases are also
        # the timing input sets), each further GPU size (odd shapes, for the masks) one seed.
        return self.settings.seeds if size_index == 0 or self.device_type == "cpu" else 1

    def baseline(self, task: Task, reference: Reference) -> dict[str, Any]:
        """Eager and torch.compile times of the task (made once)."""
        key = hashlib.sha256(task.source.encode()).hexdigest()
        with self._task_lock("baseline", key):
            if key not in self._baselines:
                self._baselines[key] = self._run_baseline(task, reference)
            return self._baselines[key]

    def _run_baseline(self, task: Task, reference: Reference) -> dict[str, Any]:
        outcome, result = self.pool.run("baseline", self._baseline_args(task, reference.inputs_path),
                                        self.settings.baseline_timeout_s)
        if outcome.status != "done":
            return {"flags": [f"baseline_failed: {outcome.status} {outcome.detail}"]}
        return self._baseline_result(result)

    def _baseline_args(self, task: Task, inputs_path: str) -> dict[str, Any]:
        return {"task_name": task.name, "task_source": task.source, "inputs_path": inputs_path,
                "timing": self.settings.timing, "compiled": self.settings.compile_baseline}

    @staticmethod
    def _baseline_result(result: dict[str, Any]) -> dict[str, Any]:
        timings = result["timings"]
        flags = [f"compile_baseline_failed: {result['compile_error']}"] if result["compile_error"] else []
        return {"eager_ms": timings["eager"]["reported_ms"],
                "compiled_ms": timings.get("compiled", {}).get("reported_ms"), "flags": flags,
                "backend_flags": result.get("backend_flags", {}), "phases_s": result.get("phases_s") or {}}


def outline(reference: Reference) -> Reference:
    """The reference without its outputs: its cases, inputs file, error floors and flags, all that a
    trusted batch needs of it (batch.py; the batch's child makes the outputs itself). Why: the built-in
    suite's outputs are 2-4 GiB a task, so 16 GiB (REFERENCE_BYTES_KEPT) keep 4-8 of 41 tasks, and a
    tree's level 1 came back to tasks let go at level 0: each ran its reference job again, whole
    under one-GPU mode's lock (~1.3 s of the GPU each, 2026-11-28), to make outputs nobody read."""
    expected = [{**e, "outputs": []} for e in reference.expected]
    return dataclasses.replace(reference, expected=expected, timing_expected=None)


def _reference(args: dict[str, Any], result: dict[str, Any]) -> Reference:
    """The Reference a reference job with `args` made."""
    return Reference(args["cases"], result["expected"], result["timing_expected"], args["inputs_path"],
                     args["timing_sets"], eager_tf32=result["eager_tf32"],
                     phases_s=result.get("phases_s") or {}, input_checks=result["input_checks"],
                     check_key=args["check_key"])
