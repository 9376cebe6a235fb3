"""`Engine`: the verification protocol of docs/design.md "Verification", over a pool of warm
workers; the backends of verifier.py (`InterpreterVerifier`, `LocalVerifier`) each hold one:

    cache? -> static checks -> reference (trusted child, cached per task; plus a derived second
    size for a task that declares one) -> candidate (its own child; the forward calls in a secret
    random order and number, with repeats: protocol.py) -> judge in this process: tampering
    (watched identities, forged launch counts, a popped census), threads, decoy, host exits,
    PyTorch compute, correctness per case, determinism and repeats, kept state; on a GPU also
    foreign device kernels, timed-output recheck, timer consistency, roofline floor, baselines
    (trusted child, cached) -> Verdict -> cache

The reference outputs live only in this process; candidates see inputs, never expected outputs.
`verify` never raises for a bad candidate; a broken task or a broken harness raises. The rules
that judge a candidate's report are judging.py's functions; this file runs the children and
applies them in order.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

import mtmc
from mtmc.program import Program
from mtmc.tasks import Task, summarize
from mtmc.verify import hardware
from mtmc.verify.cache import VerdictCache, cache_key
from mtmc.verify.forkserver import Outcome
from mtmc.verify.integrity import IntegrityError, Seal
from mtmc.verify.judging import (
    Reference,
    add_flags,
    case_label,
    judge_correctness,
    log_excerpt,
    reject,
    run_problem,
    timed_tolerances,
    timing_outputs_check,
    timing_problems,
    violations,
)
from mtmc.verify.protocol import call_schedule, verdict_rng
from mtmc.verify.static import StaticReport, check_source
from mtmc.verify.trusted import REFERENCE_BYTES_KEPT, REFERENCES_KEPT, TrustedRuns  # noqa: F401
from mtmc.verify.verdict import Status, Verdict, VerifierError  # noqa: F401  (re-exported)
from mtmc.verify.worker_pool import WorkerPool

# bump whenever a change can flip a verdict: cached verdicts expire. 2.12: the caching allocator's free
# blocks and slack overwritten before every candidate call on a GPU (scrub.py, S23); empty_cache refused.
# 2.13: the profile matches kernel names against the launch tally after its calls (child.py)
VERIFIER_VERSION = "2.13"
INTERPRETER_DEVICE = "cpu (triton interpreter)"
# One case's inputs or outputs past this (bytes, at the task's first size) move the reference to the
# large-case plan (trusted.TrustedRuns._large_plan): one seed there, the others at a small size. The
# built-in suite's largest cases (4 GiB of inputs, 2 GiB of outputs) stay on the full plan; KernelBench
# level 1's largest (6-17 GB a case, of outputs or of inputs alone, issue 25) take the large one. 0:
# the full plan always.
LARGE_CASE_BYTES = 4 * 2**30
FULL_ISOLATION = "netns+pidns+readonly+nobody"

log = logging.getLogger(__name__)
_warned_isolation: set[str] = set()  # one warning per process and level, not one per verdict


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
    shared_gpus: str = ""  # shared mode (timing_gpu.py) in words; "" in the default, exclusive mode
    large_case_bytes: int = LARGE_CASE_BYTES  # inputs or outputs a case past which the large-case plan holds
    overlap_baselines: bool = False  # a task's baselines made beside its reference (overlap.py)
    # fp32 follows eager on this GPU: an output that passes only by a conv's TF32 allowance where eager
    # computed it in fp32 is refused, not just flagged (correctness.TF32_BEYOND_EAGER_REFUSAL)
    tf32_follows_eager: bool = True

    def fingerprint(self) -> str:
        data = {k: v for k, v in dataclasses.asdict(self).items() if k not in {"seed", "strict"}}
        if not self.shared_gpus:  # exclusive mode keeps the key it had before shared mode existed
            del data["shared_gpus"]
        if not self.overlap_baselines:  # off keeps the key; on gets its own until it is shown equal
            del data["overlap_baselines"]
        return json.dumps(data, sort_keys=True)



class Engine:
    """One verification protocol over a worker pool; the backend decides device and timing."""

    def __init__(self, pool: WorkerPool, settings: Settings, device_type: str,
                 cache_path: str | None) -> None:
        self.pool = pool
        self.settings = settings
        self.device_type = device_type  # "cpu" (interpreter) or "cuda"
        self.base_seed = settings.seed if settings.seed is not None else secrets.randbelow(2**31 - 10_000)
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
        self.trusted = TrustedRuns(pool, settings, device_type, self.seal, self.base_seed)

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
        self.stamp(verdict, self.isolation, time.monotonic() - start)
        if self.cache is not None and cacheable(verdict):
            self.cache.put(key, verdict, task.name, program.digest)
        return verdict

    def stamp(self, verdict: Verdict, isolation: str, wall_s: float) -> None:
        """What every verdict says of where and how it was judged (batch.py stamps its own too)."""
        verdict.device, verdict.isolation = self.device, isolation
        if self.settings.shared_gpus:
            verdict.flags += shared_gpu_flags(verdict, self.settings.shared_gpus)
        verdict.verifier_version = VERIFIER_VERSION
        verdict.wall_s = round(wall_s, 3)

    def static_verdict(self, task: Task, program: Program) -> tuple[StaticReport, Verdict | None]:
        """The static checks' report, and the verdict they give on their own (None: they pass)."""
        report = check_source(program.source, task.library_ops)
        if report.syntax_error:
            return report, Verdict(Status.COMPILE_ERROR, violations(report))
        if self.settings.static_checks and not report.ok:
            return report, Verdict(Status.REJECTED, "static checks failed:\n" + violations(report))
        return report, None

    def _judge(self, task: Task, program: Program) -> Verdict:
        report, refused = self.static_verdict(task, program)
        if refused is not None:
            return refused
        started = time.monotonic()
        reference = self.trusted.reference(task)
        phases = {"reference": round(time.monotonic() - started, 4)}
        outcome, result = self.pool.run("candidate", self._candidate_args(task, program, reference),
                                        self.settings.timeout_s)
        phases["worker"] = round(outcome.wall_s, 4)
        phases.update({f"worker.{k}": v for k, v in ((result or {}).get("phases_s") or {}).items()})
        self._check_integrity()  # the candidate just ran: judge only with the code and data we started with
        failed = self.outcome_verdict(outcome, "candidate")
        if failed is not None:
            failed.phases_s = phases
            return failed
        left = outcome.strays
        if left:
            return Verdict(Status.REJECTED, f"the candidate left {left} process(es) running after its job "
                           "(setsid, double fork or daemon; killed): work outside the measured call or an "
                           "escape attempt (sandbox)", phases_s=phases)
        if result.get("error"):
            where = f"{case_label(reference.cases[result['case']])}: " if "case" in result else ""
            return Verdict(Status(result["error"]), where + result["message"],
                           triton_launches=sum(result.get("launches", {}).values()) or None, phases_s=phases)
        started = time.monotonic()
        verdict = self._judge_run(task, report, reference, result)
        phases["judge"] = round(time.monotonic() - started, 4)  # comparisons with the reference
        # how the task's reference was made (once per task; "reference" above is this verdict's wait)
        phases.update({f"reference_job.{k}": v for k, v in reference.phases_s.items()})
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
        problem = run_problem(task, reference, result)
        if problem:
            return reject(verdict, problem)
        verdict.flags += reference.flags
        verdict = judge_correctness(task, report, reference, result, verdict, self.device_type,
                                    self.settings.tf32_follows_eager)
        changed = result.get("state_changes") or []
        if verdict.ok and changed:
            shown = ", ".join(changed[:4]) + (f" (+{len(changed) - 4} more)" if len(changed) > 4 else "")
            return reject(verdict, f"forward changed tensors it keeps between calls when it saw new inputs "
                          f"({shown}): a result cache keyed on the inputs (S11) or state carried across "
                          "calls (S10); allocate workspaces inside forward")
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
            reject(verdict, f"device kernels other than the candidate's own Triton kernels computed: "
                    f"{shown} "
                    "(S1/S3). Only allocation, copy and fill kernels may run besides")
            return
        timing = result.get("timing")
        if timing is None:
            return
        mine = timing["timings"]["candidate"]
        check = timing_outputs_check(task, reference, result, self.settings.tf32_follows_eager)
        add_flags(verdict.flags, check.flags)
        if not check.ok:
            verdict.status, verdict.message, verdict.reason = Status.INCORRECT, check.message, check.reason
            return
        problems = timing_problems(mine, timing)
        if problems:
            reject(verdict, problems)
            return
        verdict.candidate_ms = mine["reported_ms"]
        verdict.candidate_median_ms = mine["median_ms"]
        if timing.get("side_streams"):
            verdict.flags.append(f"side_streams: kernels ran on {len(timing['side_streams'])} other CUDA "
                                 "stream(s); timed device-wide, host launch overhead included")
        self.judge_speed(task, reference, verdict)

    def judge_speed(self, task: Task, reference: Reference, verdict: Verdict) -> None:
        """A timed verdict's baselines (made once per task), its roofline floor and the excessive
        speedup flag (batch.py judges its verdicts' times here too)."""
        baseline = self.trusted.baseline(task, reference) if self.settings.baselines else {}
        verdict.eager_ms, verdict.compiled_ms = baseline.get("eager_ms"), baseline.get("compiled_ms")
        verdict.baseline_flags = dict(baseline.get("backend_flags", {}))
        verdict.flags += baseline.get("flags", [])
        if verdict.phases_s is not None:  # how the task's baselines were made (once per task)
            verdict.phases_s.update({f"baseline_job.{k}": v for k, v in baseline.get("phases_s", {}).items()})
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
        verdict.roofline_ms = hardware.roofline_ms(*work)  # physical: the datasheet rates
        if hardware.below_floor(verdict.candidate_ms, verdict.roofline_ms, self.settings.floor_margin):
            reject(verdict, f"faster than the hardware allows: {verdict.candidate_ms:.4f} ms against a "
                    f"floor of {verdict.roofline_ms:.4f} ms at the datasheet's memory and math rates (T4)")

    def _check_integrity(self) -> None:
        try:
            self.seal.check()
        except IntegrityError as err:
            raise VerifierError(str(err)) from None

    def _candidate_args(self, task: Task, program: Program, reference: Reference) -> dict[str, Any]:
        schedule = call_schedule(len(reference.cases), verdict_rng(self.settings.seed, program.digest))
        return {"source": program.source, "digest": program.digest, "inputs_path": reference.inputs_path,
                "device": self.device_type, "library_ops": list(task.library_ops),
                "time_it": self.device_type == "cuda", "timing": self.settings.timing,
                "profile_share": self.device_type == "cuda", "schedule": schedule,
                "timed_tolerances": timed_tolerances(task, reference, self.settings.tf32_follows_eager),
                "check_key": reference.check_key}  # the reference's inputs' checks (pristine.py)

    def _probe_devices(self) -> str:
        names = set()
        for worker in self.pool.workers:
            outcome, result = self.pool.run_on(worker, "probe", {"device": "cuda"}, 120.0)
            if outcome.status != "done":
                raise VerifierError(f"probing a GPU worker failed ({outcome.status} {outcome.detail}):\n"
                                    f"{outcome.log_tail}")
            names.add(result["device"])
        return " + ".join(sorted(names))

    def outcome_verdict(self, outcome: Outcome, what: str) -> Verdict | None:
        """A verdict for a child that did not finish normally, or None when it did."""
        log = log_excerpt(outcome.log_tail)
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


# --- helpers -------------------------------------------------------------------------------------
def verdict_key(task: Task, program: Program, device: str, fingerprint: str, isolation: str) -> str:
    """The verdict cache's key of `program` on `task`, judged on `device` with settings `fingerprint`
    under sandbox `isolation` (a Ray driver computes the same key as its actors' engines:
    ray_backend.py)."""
    return cache_key(task.source, hashlib.sha256(program.source.encode()).hexdigest(), device,
                     VERIFIER_VERSION, fingerprint, isolation)


def shared_gpu_flags(verdict: Verdict, shared: str) -> list[str]:
    """Shared mode's flags (timing_gpu.py). Out of memory there may be the other jobs' doing, so it says
    nothing of the program: an infrastructure failure, never cached (a tree recording judges it again)."""
    flags = [f"shared_gpu: {shared}"]
    if not verdict.ok and "out of memory" in verdict.message.lower():
        flags.append("infrastructure: out of memory on a shared GPU (fewer workers_per_gpu leave more)")
    return flags


def cacheable(verdict: Verdict) -> bool:
    """An infrastructure failure (a dead worker or actor) says nothing about the program: never cached."""
    return not any(f.startswith("infrastructure") for f in verdict.flags)


def _warn_isolation(level: str, notes: str) -> None:
    """Say once, loudly, that candidates run with less than full isolation, and why."""
    if level != FULL_ISOLATION and level not in _warned_isolation:
        _warned_isolation.add(level)
        log.warning("verifier sandbox: candidates run with isolation '%s', not '%s' (refused: %s)", level,
                    FULL_ISOLATION, notes or "unknown")
