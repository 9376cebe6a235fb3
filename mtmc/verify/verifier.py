"""The verifiers: `InterpreterVerifier` (CPU, correctness only) and `LocalVerifier` (one warm
fork-server per GPU, correctness + proof of work + timing). Both share `Engine`, which runs the
protocol of docs/design.md "Verification":

    cache? -> static checks -> reference (trusted child, cached per task; plus a derived second
    size for a task that declares one) -> candidate (its own child; the forward calls in a secret
    random order and number, with repeats: protocol.py) -> judge in this process: tampering
    (watched identities, forged launch counts, a popped census), threads, decoy, host exits,
    PyTorch compute, correctness per case, determinism and repeats, kept state; on a GPU also
    foreign device kernels, timed-output recheck, timer consistency, roofline floor, baselines
    (trusted child, cached) -> Verdict -> cache

The reference outputs live only in this process; candidates see inputs, never expected outputs.
`verify` never raises for a bad candidate; a broken task or a broken harness raises.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
import json
import logging
import os
import random
import secrets
import threading
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

import mtmc
from mtmc.program import Program
from mtmc.tasks import Task, summarize
from mtmc.verify import hardware
from mtmc.verify.cache import VerdictCache, cache_key
from mtmc.verify.correctness import Comparison, compare_case, compare_outputs, compare_runs, eager_precision
from mtmc.verify.forkserver import Outcome, clean_env
from mtmc.verify.integrity import IntegrityError, Seal
from mtmc.verify.policy import HOST_READ_ATEN_OPS
from mtmc.verify.protocol import call_schedule, derived_size, verdict_rng
from mtmc.verify.static import StaticReport, check_source
from mtmc.verify.verdict import Status, Verdict
from mtmc.verify.worker_pool import WorkerPool

VERIFIER_VERSION = "1.8"  # bump whenever a change can flip a verdict: cached verdicts expire
INTERPRETER_DEVICE = "cpu (triton interpreter)"
REFERENCES_KEPT = 8  # tasks whose reference outputs stay in memory (mapped from RAM-backed files)...
REFERENCE_BYTES_KEPT = 16 * 2**30  # ...as long as they fit in this; the latest is always kept
FULL_ISOLATION = "netns+pidns+readonly+nobody"

log = logging.getLogger(__name__)
_warned_isolation: set[str] = set()  # one warning per process and level, not one per verdict


class VerifierError(RuntimeError):
    """The verifier itself failed (a harness bug, a task whose reference cannot run)."""


@dataclass(frozen=True)
class Settings:
    """Everything that shapes a verdict. All but `seed` and `strict` enter the cache key."""

    seeds: int = 3
    timeout_s: float = 120.0
    static_checks: bool = True
    triton_share_min: float = 0.5  # unused since 1.6: foreign device kernels are refused outright
    floor_margin: float = 0.9
    excess_speedup: float = 10.0
    timing: dict[str, float] = field(default_factory=dict)
    baselines: bool = True
    compile_baseline: bool = True
    baseline_timeout_s: float = 900.0
    peaks: dict[str, float | None] = field(default_factory=dict)
    seed: int | None = None
    strict: bool = False

    def fingerprint(self) -> str:
        data = {k: v for k, v in dataclasses.asdict(self).items() if k not in {"seed", "strict"}}
        return json.dumps(data, sort_keys=True)


@dataclass
class Reference:
    cases: list[dict[str, Any]]
    expected: list[dict[str, Any]]
    timing_expected: list[list[torch.Tensor] | None] | None  # None: equal to that case's expected
    inputs_path: str
    timing_sets: list[int] | None = None  # the cases whose inputs are timed (on a GPU: the first size's)
    flags: list[str] = field(default_factory=list)  # what every verdict on this reference carries
    convolves: bool = False  # the reference computes a convolution: eager runs it on TF32 (correctness.py)

    @property
    def nbytes(self) -> int:
        sets = [e["outputs"] for e in self.expected]
        sets += [t for t in self.timing_expected or [] if t is not None]
        return sum(t.nbytes for outputs in sets for t in outputs)


class Engine:
    """One verification protocol over a worker pool; the backend decides device and timing."""

    def __init__(self, pool: WorkerPool, settings: Settings, device_type: str,
                 cache_path: str | None) -> None:
        self.pool = pool
        self.settings = settings
        self.device_type = device_type  # "cpu" (interpreter) or "cuda"
        self.base_seed = settings.seed if settings.seed is not None else secrets.randbelow(2**31 - 10_000)
        self._size_rng = random.Random(settings.seed) if settings.seed is not None else random.SystemRandom()
        self.cache = VerdictCache(cache_path) if cache_path else None
        self.seal = Seal()  # the verifier's own source, then each task file and reference inputs used
        package = Path(mtmc.__file__).parent
        for tree in ("verify", "tasks"):  # the harness, and the task loader with the built-in tasks
            self.seal.add_tree(package / tree)
        for path in ("__init__.py", "program.py"):
            self.seal.add_file(package / path)
        self.isolation = pool.isolation
        _warn_isolation(self.isolation, pool.isolation_notes)
        self.device = INTERPRETER_DEVICE if device_type == "cpu" else self._probe_devices()
        self._references: OrderedDict[str, Reference] = OrderedDict()
        self._baselines: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    # --- the protocol ------------------------------------------------------------------------------
    def verify(self, task: Task, program: Program) -> Verdict:
        start = time.monotonic()
        self._check_integrity()
        key = verdict_key(task, program, self.device, self.settings.fingerprint(), self.isolation)
        cached = self.cache.get(key) if self.cache is not None else None
        if cached is not None:
            return cached
        try:
            verdict = self._judge(task, program)
        finally:
            if torch.cuda.is_initialized():
                # GB-sized comparisons ran here: hand their cached blocks back before the next
                # candidate's child needs the device memory.
                torch.cuda.empty_cache()
        verdict.device = self.device
        verdict.isolation = self.isolation
        verdict.verifier_version = VERIFIER_VERSION
        verdict.wall_s = round(time.monotonic() - start, 3)
        if self.cache is not None and cacheable(verdict):
            self.cache.put(key, verdict, task.name, program.digest)
        return verdict

    def _judge(self, task: Task, program: Program) -> Verdict:
        report = check_source(program.source, task.library_ops)
        if report.syntax_error:
            return Verdict(Status.COMPILE_ERROR, _violations(report))
        if self.settings.static_checks and not report.ok:
            return Verdict(Status.REJECTED, "static checks failed:\n" + _violations(report))
        started = time.monotonic()
        reference = self._reference(task)
        phases = {"reference": round(time.monotonic() - started, 4)}
        outcome, result = self.pool.run("candidate", self._candidate_args(task, program, reference),
                                        self.settings.timeout_s)
        phases["worker"] = round(outcome.wall_s, 4)
        phases.update({f"worker.{k}": v for k, v in ((result or {}).get("phases_s") or {}).items()})
        self._check_integrity()  # the candidate just ran: judge only with the code and data we started with
        failed = self._outcome_verdict(outcome, "candidate")
        if failed is not None:
            failed.phases_s = phases
            return failed
        left = outcome.strays
        if left:
            return Verdict(Status.REJECTED, f"the candidate left {left} process(es) running after its job "
                           "(setsid, double fork or daemon; killed): work outside the measured call or an "
                           "escape attempt (sandbox)", phases_s=phases)
        if result.get("error"):
            where = f"{_label(reference.cases[result['case']])}: " if "case" in result else ""
            return Verdict(Status(result["error"]), where + result["message"],
                           triton_launches=sum(result.get("launches", {}).values()) or None, phases_s=phases)
        started = time.monotonic()
        verdict = self._judge_run(task, report, reference, result)
        phases["judge"] = round(time.monotonic() - started, 4)  # comparisons with the reference
        verdict.phases_s = phases
        if verdict.ok and self.device_type == "cuda":
            started = time.monotonic()
            self._judge_gpu(task, reference, result, verdict)
            phases["judge_gpu"] = round(time.monotonic() - started, 4)  # includes baselines on first use
        return verdict

    def _judge_run(self, task: Task, report: StaticReport, reference: Reference,
                   result: dict[str, Any]) -> Verdict:
        """Tampering, threads, decoys, PyTorch compute, then correctness of every case."""
        launches = result["launches"]
        verdict = Verdict(Status.OK, triton_launches=sum(launches.values()))
        if len(result["cases"]) != len(reference.cases):
            return _reject(verdict, f"the candidate's process returned results for {len(result['cases'])} of "
                           f"{len(reference.cases)} cases: the harness was tampered with (T3/S19)")
        if result["tampered"]:
            return _reject(verdict, f"the candidate replaced {', '.join(result['tampered'])}: "
                           "monkey-patching the harness (T3/S19)")
        if result["threads_started"] > 0:
            return _reject(verdict, f"the candidate left {result['threads_started']} thread(s) running: "
                           "work outside the measured call (T2)")
        tampering = _instrument_problem(result)
        if tampering:
            return _reject(verdict, tampering)
        for case, got in zip(reference.cases, result["cases"], strict=True):
            if 0 in got["launches"]:
                kernels = ", ".join(launches) or "none"
                return _reject(verdict, f"{_label(case)}: forward launched none of the candidate's Triton "
                               f"kernels (launched over all cases: {kernels}): decoy kernel (S2)")
        # The forwards after the cases (state check; on a GPU, profile and timing) ran under the
        # census too: the same rules hold for them.
        others = result["other_calls"]
        if others["without_launches"]:
            return _reject(verdict, f"{others['without_launches']} of {others['calls']} forward calls "
                           "after the checked cases (state check, profile, timing) launched none of the "
                           "candidate's Triton kernels: decoy kernel (S2)")
        foreign, exits = Counter(others["foreign_ops"]), Counter(others["host_exits"])
        for got in result["cases"]:
            foreign.update(got["foreign_ops"])
            exits.update(got.get("host_exits") or {})
        if exits:
            moved = ", ".join(f"{name}() x{n}" for name, n in exits.most_common())
            return _reject(verdict, f"forward moved tensor data to the host ({moved}): host compute "
                           "(numpy, Python lists) outside any kernel (S1/S3)")
        reads = {op: n for op, n in foreign.items() if op in HOST_READ_ATEN_OPS}
        if reads:
            ops = ", ".join(f"aten.{op} x{n}" for op, n in reads.items())
            return _reject(verdict, f"forward read tensor values into Python ({ops}: .item(), float(t), "
                           "int(t), bool(t) or `if t:`): host logic keyed on the data, such as a result "
                           "cache keyed on the input's contents (S11)")
        if foreign:
            ops = ", ".join(f"aten.{op} x{n}" for op, n in foreign.most_common())
            return _reject(verdict, f"forward ran PyTorch compute outside Triton kernels: {ops} (S1/S3). "
                           f"Allowed: glue ops (allocation, views, copies, casts, cat) and the task's "
                           f"library ops {list(task.library_ops) or '(none)'}")
        verdict.flags += reference.flags
        verdict = self._judge_correctness(task, report, reference, result, verdict)
        changed = result.get("state_changes") or []
        if verdict.ok and changed:
            shown = ", ".join(changed[:4]) + (f" (+{len(changed) - 4} more)" if len(changed) > 4 else "")
            return _reject(verdict, f"forward changed tensors it keeps between calls when it saw new inputs "
                           f"({shown}): a result cache keyed on the inputs (S11) or state carried across "
                           "calls (S10); allocate workspaces inside forward")
        return verdict

    def _judge_correctness(self, task: Task, report: StaticReport, reference: Reference,
                           result: dict[str, Any], verdict: Verdict) -> Verdict:
        meta = eager_precision(task.meta, reference.convolves)
        worst = Comparison(True)
        flags: list[str] = []
        for case, expected, got in zip(reference.cases, reference.expected, result["cases"], strict=True):
            label = _label(case)
            checks = [compare_case(expected, got, meta, self.device_type, label)]
            if checks[0].ok:
                checks.append(compare_runs(got["outputs"], got["second_outputs"], got["deterministic"],
                                           report.uses_atomics, expected["outputs"], meta, label))
            for check in checks:
                worst.max_abs_error = max(worst.max_abs_error, check.max_abs_error)
                worst.rel_error = max(worst.rel_error, check.rel_error)
                flags += [f for f in check.flags if f not in flags]
                if not check.ok:
                    verdict.status, verdict.message = Status.INCORRECT, check.message
                    break
            if not verdict.ok:
                break
        verdict.max_abs_error, verdict.rel_error = worst.max_abs_error, worst.rel_error
        verdict.flags += flags
        if verdict.ok:
            seeds = Counter(repr(c["sizes"]) for c in reference.cases).values()
            same = min(seeds) == max(seeds)
            per_size = f"x {max(seeds)} seeds" if same else "seeds " + "+".join(map(str, seeds))
            kernels = ", ".join(f"{k} x{n}" for k, n in result["launches"].items())
            verdict.message = (f"correct on {len(reference.cases)} cases ({len(seeds)} size(s) {per_size}); "
                               f"launches: {kernels}")
        return verdict

    def _judge_gpu(self, task: Task, reference: Reference, result: dict[str, Any], verdict: Verdict) -> None:
        """Proof of work by device time, timed-output recheck, timer sanity, baselines, roofline."""
        share = result.get("share") or {}
        verdict.triton_share = share.get("share")
        foreign = share.get("foreign_kernels") or []
        if verdict.triton_share is None:
            verdict.flags.append("no_profile: the profiler saw no device kernels")
        elif foreign and not task.library_ops:
            shown = ", ".join(name[:120] for name in foreign[:4])
            _reject(verdict, f"device kernels other than the candidate's own Triton kernels computed: "
                    f"{shown} "
                    "(S1/S3). Only allocation, copy and fill kernels may run besides")
            return
        timing = result.get("timing")
        if timing is None:
            return
        mine = timing["timings"]["candidate"]
        message = _timing_outputs_problem(task, reference, result)
        if message:
            verdict.status, verdict.message = Status.INCORRECT, message
            return
        problems = _timing_problems(mine, timing)
        if problems:
            _reject(verdict, problems)
            return
        verdict.candidate_ms = mine["reported_ms"]
        verdict.candidate_median_ms = mine["median_ms"]
        if timing.get("side_streams"):
            verdict.flags.append(f"side_streams: kernels ran on {len(timing['side_streams'])} other CUDA "
                                 "stream(s); timed device-wide, host launch overhead included")
        baseline = self._baseline(task, reference) if self.settings.baselines else {}
        verdict.eager_ms, verdict.compiled_ms = baseline.get("eager_ms"), baseline.get("compiled_ms")
        verdict.baseline_flags = dict(baseline.get("backend_flags", {}))
        verdict.flags += baseline.get("flags", [])
        self._judge_roofline(task, reference, verdict)
        speedup = verdict.speedup_eager
        if verdict.ok and speedup and speedup > self.settings.excess_speedup:
            verdict.flags.append(f"excessive_speedup: {speedup:.1f}x over eager; inspect it")

    def _judge_roofline(self, task: Task, reference: Reference, verdict: Verdict) -> None:
        peaks = hardware.peaks_for(self.device, **self.settings.peaks)
        if peaks is None:
            verdict.flags.append(f"no_roofline: no peak numbers for {self.device}")
            return
        try:
            summary = summarize(task, reference.cases[0]["sizes"])
        except Exception as err:  # an op without a meta kernel: no floor, say so
            verdict.flags.append(f"no_roofline: summarizing the task failed ({type(err).__name__})")
            return
        half = any(t.dtype in {"float16", "bfloat16"} for t in summary.inputs + summary.outputs)
        work = (summary.matmul_flops, summary.bytes_min, half, peaks)
        verdict.roofline_ms = hardware.roofline_ms(*work)  # reachable: the measured copy bandwidth
        limit_ms = hardware.roofline_ms(*work, limit=True)  # physical: the datasheet rates
        if hardware.below_floor(verdict.candidate_ms, limit_ms, self.settings.floor_margin):
            _reject(verdict, f"faster than the hardware allows: {verdict.candidate_ms:.4f} ms against a "
                    f"floor of {limit_ms:.4f} ms at the datasheet's memory and math rates (T4)")

    def _check_integrity(self) -> None:
        try:
            self.seal.check()
        except IntegrityError as err:
            raise VerifierError(str(err)) from None

    # --- trusted children: reference and baselines ----------------------------------------------
    def _reference(self, task: Task) -> Reference:
        key = hashlib.sha256(task.source.encode()).hexdigest()
        with self._lock:
            if key in self._references:
                self._references.move_to_end(key)
                return self._references[key]
            size_sets = task.sizes(self.device_type)
            derived = derived_size(task, size_sets[0], self._size_rng) if len(size_sets) == 1 else None
            try:
                reference = self._run_reference(task, key, size_sets, derived)
            except VerifierError as err:
                if derived is None:
                    raise
                reference = self._run_reference(task, key, size_sets, None)
                why = str(err).splitlines()[0][:200]
                reference.flags.append(f"no_derived_size: the reference fails at {derived} ({why}); "
                                       "checked at the declared size only")
            self.seal.add_file(reference.inputs_path)  # what every candidate regenerates its inputs from
            if task.path:
                self.seal.add_file(task.path)
            self._references[key] = reference
            while len(self._references) > 1 and (
                    len(self._references) > REFERENCES_KEPT
                    or sum(r.nbytes for r in self._references.values()) > REFERENCE_BYTES_KEPT):
                self._references.popitem(last=False)
            return reference

    def _run_reference(self, task: Task, key: str, size_sets: list[dict[str, Any]],
                       derived: dict[str, Any] | None) -> Reference:
        """The reference on every case: each size set's seeds, and one seed of the derived size
        (a second size, drawn by the verifier, for a task that declares one: protocol.py)."""
        seed = self.base_seed
        plan = [(sizes, self._seeds(j)) for j, sizes in enumerate(size_sets)]
        plan += [(derived, 1)] if derived else []
        cases = [{"sizes": sizes, "model_seed": seed + i, "input_seed": seed + 5000 + i}
                 for sizes, seeds in plan for i in range(seeds)]
        # Timed on a GPU: the first size's cases, each its own input set (see timing.py).
        timing_sets = [i for i, c in enumerate(cases) if c["sizes"] == cases[0]["sizes"]] \
            if self.device_type == "cuda" else None
        folder = self.pool.data_dir(f"reference-{key[:16]}")
        inputs_path = str(folder / "inputs.pt")
        outcome, result = self.pool.run(
            "reference", {"task_name": task.name, "task_source": task.source, "cases": cases,
                          "device": self.device_type, "inputs_path": inputs_path,
                          "timing_sets": timing_sets}, self.settings.timeout_s)
        if outcome.status != "done":
            raise VerifierError(f"{task.where}: running the reference failed ({outcome.status} "
                                f"{outcome.detail}):\n{outcome.log_tail}")
        return Reference(cases, result["expected"], result["timing_expected"], inputs_path, timing_sets,
                         convolves=result["convolves"])

    def _seeds(self, size_index: int) -> int:
        # GPU sizes are GBs of outputs per case: the first size gets every seed (its cases are also
        # the timing input sets), each further GPU size (odd shapes, for the masks) one seed.
        return self.settings.seeds if size_index == 0 or self.device_type == "cpu" else 1

    def _baseline(self, task: Task, reference: Reference) -> dict[str, Any]:
        key = hashlib.sha256(task.source.encode()).hexdigest()
        with self._lock:
            if key not in self._baselines:
                self._baselines[key] = self._run_baseline(task, reference)
            return self._baselines[key]

    def _run_baseline(self, task: Task, reference: Reference) -> dict[str, Any]:
        outcome, result = self.pool.run(
            "baseline", {"task_name": task.name, "task_source": task.source,
                         "inputs_path": reference.inputs_path, "timing": self.settings.timing,
                         "compiled": self.settings.compile_baseline}, self.settings.baseline_timeout_s)
        if outcome.status != "done":
            return {"flags": [f"baseline_failed: {outcome.status} {outcome.detail}"]}
        timings = result["timings"]
        flags = [f"compile_baseline_failed: {result['compile_error']}"] if result["compile_error"] else []
        return {"eager_ms": timings["eager"]["reported_ms"],
                "compiled_ms": timings.get("compiled", {}).get("reported_ms"), "flags": flags,
                "backend_flags": result.get("backend_flags", {})}

    def _candidate_args(self, task: Task, program: Program, reference: Reference) -> dict[str, Any]:
        schedule = call_schedule(len(reference.cases), verdict_rng(self.settings.seed, program.digest))
        return {"source": program.source, "digest": program.digest, "inputs_path": reference.inputs_path,
                "device": self.device_type, "library_ops": list(task.library_ops),
                "time_it": self.device_type == "cuda", "timing": self.settings.timing,
                "profile_share": self.device_type == "cuda", "schedule": schedule}

    def _probe_devices(self) -> str:
        names = set()
        for worker in self.pool.workers:
            outcome, result = self.pool.run_on(worker, "probe", {"device": "cuda"}, 120.0)
            if outcome.status != "done":
                raise VerifierError(f"probing a GPU worker failed ({outcome.status} {outcome.detail}):\n"
                                    f"{outcome.log_tail}")
            names.add(result["device"])
        return " + ".join(sorted(names))

    def _outcome_verdict(self, outcome: Outcome, what: str) -> Verdict | None:
        """A verdict for a child that did not finish normally, or None when it did."""
        log = _log_excerpt(outcome.log_tail)
        if outcome.status == "done":
            return None
        if outcome.status == "timeout":
            return Verdict(Status.TIMEOUT, f"the {what} ran past the {outcome.detail} limit (killed)")
        if outcome.status == "signal":
            hint = {"SIGSEGV": "segmentation fault (bad pointer, out-of-bounds access)",
                    "SIGBUS": "bus error (bad pointer)", "SIGABRT": "aborted",
                    "SIGKILL": "killed (out of memory?)", "SIGXCPU": "CPU time limit",
                    "SIGFPE": "arithmetic fault"}.get(outcome.detail, "")
            return Verdict(Status.CRASH, f"the {what} process died by {outcome.detail} {hint}{log}")
        if outcome.status == "harness_error" and self.settings.strict:
            raise VerifierError(f"verifier harness error in the {what} child:\n{outcome.log_tail}")
        infrastructure = outcome.status.startswith("worker") or outcome.status == "harness_error"
        flags = ["infrastructure: " + outcome.status] if infrastructure else []
        return Verdict(Status.CRASH, f"the {what} process ended abnormally: {outcome.status} "
                       f"{outcome.detail}{log}", flags=flags)

    def close(self) -> None:
        self.pool.close()


# --- the backends ------------------------------------------------------------------------------
class InterpreterVerifier:
    """CPU backend: Triton's interpreter in fork-server workers. Correctness only, no timings."""

    def __init__(self, seeds: int = 3, timeout_s: float = 120.0, workers: int = 1,
                 cache_path: str | None = None, static_checks: bool = True,
                 memory_limit_gb: float | None = 8.0,
                 cpu_threads: int | None = 1, seed: int | None = None, strict: bool = False) -> None:
        settings = Settings(seeds=seeds, timeout_s=timeout_s, static_checks=static_checks, seed=seed,
                            strict=strict, baselines=False)
        env = _worker_env({"TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": "",
                           "OMP_NUM_THREADS": str(cpu_threads or 1)})
        pool = WorkerPool("interpreter", [env] * workers, memory_limit_gb, cpu_threads)
        self.engine = Engine(pool, settings, "cpu", cache_path)

    def verify(self, task: Task, program: Program) -> Verdict:
        return self.engine.verify(task, program)

    def close(self) -> None:
        self.engine.close()

    def __enter__(self) -> InterpreterVerifier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class LocalVerifier:
    """GPU backend: one warm fork-server per visible GPU; correctness, proof of work and timing."""

    def __init__(self, seeds: int = 3, timeout_s: float = 120.0, gpus: list[int] | None = None,
                 cache_path: str | None = None, static_checks: bool = True,
                 memory_limit_gb: float | None = None, triton_share_min: float = 0.5,
                 floor_margin: float = 0.9, excess_speedup: float = 10.0,
                 peak_bandwidth: float | None = None, peak_flops_fp32: float | None = None,
                 peak_flops_fp16: float | None = None, peak_bandwidth_max: float | None = None,
                 warmup_ms: float = 100.0, min_reps: int = 10,
                 max_reps: int = 200, target_rse: float = 0.01, time_budget_s: float = 2.0,
                 baselines: bool = True, compile_baseline: bool = True, baseline_timeout_s: float = 900.0,
                 seed: int | None = None, strict: bool = False) -> None:
        gpus = list(range(torch.cuda.device_count())) if gpus is None else list(gpus)
        if not gpus:
            raise VerifierError("LocalVerifier needs a CUDA GPU; use InterpreterVerifier on the CPU")
        timing = {"warmup_ms": warmup_ms, "min_reps": min_reps, "max_reps": max_reps,
                  "target_rse": target_rse, "budget_s": time_budget_s}
        peaks = {"bandwidth": peak_bandwidth, "flops_fp32": peak_flops_fp32, "flops_fp16": peak_flops_fp16,
                 "bandwidth_max": peak_bandwidth_max}
        settings = Settings(seeds=seeds, timeout_s=timeout_s, static_checks=static_checks,
                            triton_share_min=triton_share_min, floor_margin=floor_margin,
                            excess_speedup=excess_speedup, timing=timing, baselines=baselines,
                            compile_baseline=compile_baseline, baseline_timeout_s=baseline_timeout_s,
                            peaks=peaks, seed=seed, strict=strict)
        envs = [_worker_env({"TRITON_INTERPRET": None, "CUDA_VISIBLE_DEVICES": str(_physical(g))})
                for g in gpus]
        pool = WorkerPool("cuda", envs, memory_limit_gb, None)
        self.engine = Engine(pool, settings, "cuda", cache_path)

    def verify(self, task: Task, program: Program) -> Verdict:
        return self.engine.verify(task, program)

    def close(self) -> None:
        self.engine.close()

    def __enter__(self) -> LocalVerifier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def make_verifier(backend: str = "auto", **kwargs: Any) -> InterpreterVerifier | LocalVerifier:
    """`auto` picks LocalVerifier when a GPU is visible; arguments a backend lacks are dropped."""
    if backend == "auto":
        backend = "local" if torch.cuda.is_available() else "interpreter"
    cls = {"local": LocalVerifier, "interpreter": InterpreterVerifier}[backend]
    accepted = inspect.signature(cls).parameters
    return cls(**{k: v for k, v in kwargs.items() if k in accepted})


# --- helpers -------------------------------------------------------------------------------------
def verdict_key(task: Task, program: Program, device: str, fingerprint: str, isolation: str) -> str:
    """The verdict cache's key of `program` on `task`, judged on `device` with settings `fingerprint`
    under sandbox `isolation` (a Ray driver computes the same key as its actors' engines:
    ray_backend.py)."""
    return cache_key(task.source, hashlib.sha256(program.source.encode()).hexdigest(), device,
                     VERIFIER_VERSION, fingerprint, isolation)


def cacheable(verdict: Verdict) -> bool:
    """An infrastructure failure (a dead worker or actor) says nothing about the program: never cached."""
    return not any(f.startswith("infrastructure") for f in verdict.flags)


def _worker_env(overrides: dict[str, str | None]) -> dict[str, str]:
    package_root = str(Path(mtmc.__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in [package_root, os.environ.get("PYTHONPATH", "")] if p)
    return clean_env(dict(os.environ), {**overrides, "PYTHONPATH": path})


def _warn_isolation(level: str, notes: str) -> None:
    """Say once, loudly, that candidates run with less than full isolation, and why."""
    if level != FULL_ISOLATION and level not in _warned_isolation:
        _warned_isolation.add(level)
        log.warning("verifier sandbox: candidates run with isolation '%s', not '%s' (refused: %s)", level,
                    FULL_ISOLATION, notes or "unknown")


def _physical(gpu: int) -> str:
    """The physical id of logical GPU `gpu` under the caller's own CUDA_VISIBLE_DEVICES."""
    visible = [d for d in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if d.strip()]
    return visible[gpu] if gpu < len(visible) else str(gpu)


def _label(case: dict[str, Any]) -> str:
    sizes = ", ".join(f"{k}={v}" for k, v in case["sizes"].items()) or "file sizes"
    return f"case [{sizes}; seed {case['model_seed']}]"


def _violations(report: StaticReport) -> str:
    return "\n".join(str(v) for v in report.violations)


def _reject(verdict: Verdict, message: str) -> Verdict:
    verdict.status, verdict.message = Status.REJECTED, message
    return verdict


def _instrument_problem(result: dict[str, Any]) -> str:
    """Tampering with the proof-of-work instruments in the candidate's process, or work they cannot
    see (another thread): the message of the rejection, or ''."""
    if result.get("counter_forged"):
        return ("the launch counter's counts do not match its own tally: launches were forged "
                "(tampering with the verifier, S2/T3)")
    if result.get("threads_spawned"):
        return (f"the candidate's code started {result['threads_spawned']} thread(s): work on another "
                "thread is invisible to the op census (T2)")
    calls = [*result["cases"], result["other_calls"]]
    broken = next((c["census_broken"] for c in calls if c.get("census_broken")), "")
    if broken:
        return f"{broken}: tampering with the verifier (T3/S19)"
    return ""


def _timing_outputs_problem(task: Task, reference: Reference, result: dict[str, Any]) -> str:
    """The untimed outputs on each timing set against the reference. A set the reference child
    found equal to its case's expected outputs (None), and the candidate child found equal to its
    own outputs for that case (None), is the case's check again: nothing left to compare."""
    timing_sets = reference.timing_sets or []
    if len(result["timing_outputs"]) != len(timing_sets):
        return (f"{len(result['timing_outputs'])} untimed output sets came back for {len(timing_sets)} "
                "timing sets")
    sets = zip(timing_sets, reference.timing_expected, result["timing_outputs"], strict=True)
    for k, (i, ref, out) in enumerate(sets):
        if ref is None and out is None:
            continue
        ref = reference.expected[i]["outputs"] if ref is None else ref
        out = result["cases"][i]["outputs"] if out is None else out
        meta = eager_precision(task.meta, reference.convolves)
        check = compare_outputs(ref, out, meta, f"timing input set {k}")
        if not check.ok:
            return check.message
    return ""


def _timing_problems(mine: dict[str, Any], timing: dict[str, Any]) -> str:
    if mine["mismatches"]:
        return (f"{mine['mismatches']} of {mine['reps']} timed calls returned something other than the "
                "untimed call on the same inputs: cached, stale or skipped work (S11/S12/T5)")
    if mine["reused_storage"]:
        return (f"{mine['reused_storage']} timed calls returned the storage of an earlier output that is "
                "still alive: result replay (S11)")
    if timing.get("side_streams_late"):
        return ("Triton kernels went to another CUDA stream only while being timed: work outside the "
                "measured region (T1)")
    if timing["threads_started"] > 0:
        return "threads started during timing: work outside the measured call (T2)"
    if timing["events_ms"] > timing["wall_ms"] + 0.05:
        return (f"CUDA event times ({timing['events_ms']:.3f} ms in all) exceed the host wall clock "
                f"({timing['wall_ms']:.3f} ms): the timers were manipulated (T1-T3)")
    return ""


def _log_excerpt(tail: str, chars: int = 1500) -> str:
    tail = tail.strip()
    return f"\n--- process output (tail) ---\n{tail[-chars:]}" if tail else ""
