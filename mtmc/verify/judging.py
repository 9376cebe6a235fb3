"""The judging rules: what the main process concludes from a candidate child's report, against
the reference's outputs. Plain functions of the report (no worker, no device), each returning the
message of a rejection or '' (or, for correctness, the verdict), so each rule is tested on a report
built by hand. The order the engine applies them in is engine.py's `Engine._judge_run`."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import torch

from mtmc.tasks import Task
from mtmc.verify.correctness import (
    Comparison,
    compare_case,
    compare_outputs,
    compare_runs,
    eager_precision,
    held_tolerance,
)
from mtmc.verify.output_seals import outputs_problem
from mtmc.verify.policy import HOST_READ_ATEN_OPS
from mtmc.verify.pristine import mutated_inputs, received_problem
from mtmc.verify.static import StaticReport
from mtmc.verify.verdict import Status, Verdict


@dataclass
class Reference:
    """The reference's side of every verdict on a task: the cases, their expected outputs (only
    ever in the main process) and the inputs file the candidate regenerates its inputs from."""

    cases: list[dict[str, Any]]
    expected: list[dict[str, Any]]
    timing_expected: list[list[torch.Tensor] | None] | None  # None: equal to that case's expected
    inputs_path: str
    timing_sets: list[int] | None = None  # the cases whose inputs are timed (on a GPU: the first size's)
    flags: list[str] = field(default_factory=list)  # what every verdict on this reference carries
    eager_tf32: bool = False  # the reference runs a convolution or a cuDNN RNN, which eager runs on TF32
    phases_s: dict[str, float] = field(default_factory=dict)  # where the reference job's time went
    plan: str = ""  # the large-case plan's note (trusted.py), named in every ok verdict; "": full plan
    # each case's inputs, checked with the secret `check_key` in the reference job (pristine.py); None
    # only for a Reference built by hand
    input_checks: list[list[Any]] | None = None
    check_key: int = 0

    @property
    def nbytes(self) -> int:
        sets = [e["outputs"] for e in self.expected]
        sets += [t for t in self.timing_expected or [] if t is not None]
        return sum(t.nbytes for outputs in sets for t in outputs)


def run_problem(task: Task, reference: Reference, result: dict[str, Any]) -> str:
    """What the candidate's process reported against the rules, before any output is compared:
    tampering, threads, decoys, host exits and reads, PyTorch compute. The message of the
    rejection, or ''."""
    launches = result["launches"]
    if len(result["cases"]) != len(reference.cases):
        return (f"the candidate's process returned results for {len(result['cases'])} of "
                f"{len(reference.cases)} cases: the harness was tampered with (T3/S19)")
    if result["tampered"]:
        return f"the candidate replaced {', '.join(result['tampered'])}: monkey-patching the harness (T3/S19)"
    if result["threads_started"] > 0:
        return (f"the candidate left {result['threads_started']} thread(s) running: "
                "work outside the measured call (T2)")
    tampering = instrument_problem(result)
    if tampering:
        return tampering
    if reference.input_checks is not None:  # the calls' inputs against the reference's (S21), the
        # outputs that came back against their calls' digests (S22): both keyed with its secret
        tampering = received_problem(reference.input_checks, result.get("inputs_seen")) or \
            outputs_problem(reference.check_key, result, reference.timing_sets)
        if tampering:
            return tampering
    for case, got in zip(reference.cases, result["cases"], strict=True):
        if 0 in got["launches"]:
            kernels = ", ".join(launches) or "none"
            return (f"{case_label(case)}: forward launched none of the candidate's Triton "
                    f"kernels (launched over all cases: {kernels}): decoy kernel (S2)")
    # The forwards after the cases (state check; on a GPU, profile and timing) ran under the
    # census too: the same rules hold for them.
    others = result["other_calls"]
    if others["without_launches"]:
        return (f"{others['without_launches']} of {others['calls']} forward calls "
                "after the checked cases (state check, profile, timing) launched none of the "
                "candidate's Triton kernels: decoy kernel (S2)")
    return compute_problem(task, result)


def compute_problem(task: Task, result: dict[str, Any]) -> str:
    """Work outside the candidate's kernels, over every censused forward: data moved to the host,
    tensor values read into Python, PyTorch compute. The message of the rejection, or ''."""
    others = result["other_calls"]
    foreign, exits = Counter(others["foreign_ops"]), Counter(others["host_exits"])
    for got in result["cases"]:
        foreign.update(got["foreign_ops"])
        exits.update(got.get("host_exits") or {})
    if exits:
        moved = ", ".join(f"{name}() x{n}" for name, n in exits.most_common())
        return (f"forward moved tensor data to the host ({moved}): host compute "
                "(numpy, Python lists) outside any kernel (S1/S3)")
    reads = {op: n for op, n in foreign.items() if op in HOST_READ_ATEN_OPS}
    if reads:
        ops = ", ".join(f"aten.{op} x{n}" for op, n in reads.items())
        return (f"forward read tensor values into Python ({ops}: .item(), float(t), "
                "int(t), bool(t) or `if t:`): host logic keyed on the data, such as a result "
                "cache keyed on the input's contents (S11)")
    if foreign:
        ops = ", ".join(f"aten.{op} x{n}" for op, n in foreign.most_common())
        return (f"forward ran PyTorch compute outside Triton kernels: {ops} (S1/S3). "
                f"Allowed: glue ops (allocation, views, copies, casts, cat) and the task's "
                f"library ops {list(task.library_ops) or '(none)'}")
    return ""


def judge_correctness(task: Task, report: StaticReport, reference: Reference, result: dict[str, Any],
                      verdict: Verdict, device_type: str, tf32_follows_eager: bool = True) -> Verdict:
    """Every case against the reference, then its repeats against its first call (the worst
    errors and every flag recorded); the message counts what was checked. `tf32_follows_eager`:
    refuse_tf32_beyond_eager's rule."""
    meta = eager_precision(task.meta, reference.eager_tf32)
    refuse_tf32 = refuse_tf32_beyond_eager(task, tf32_follows_eager)
    worst = Comparison(True)
    flags: list[str] = []
    for index, (case, expected, got) in enumerate(zip(reference.cases, reference.expected, result["cases"],
                                                      strict=True)):
        label = case_label(case)
        got = _with_mutations(reference, result, index, got)
        checks = [compare_case(expected, got, meta, device_type, label, refuse_tf32)]
        if checks[0].ok:
            checks.append(compare_runs(got["outputs"], got["second_outputs"], got["deterministic"],
                                       report.uses_atomics, expected["outputs"], meta, label,
                                       expected.get("eager_errors"), expected.get("reference_errors"),
                                       bool(expected.get("eager_measured")), refuse_tf32))
        for check in checks:
            worst.max_abs_error = max(worst.max_abs_error, check.max_abs_error)
            worst.rel_error = max(worst.rel_error, check.rel_error)
            flags += [f for f in check.flags if f not in flags]
            if not check.ok:
                verdict.status, verdict.message = Status.INCORRECT, check.message
                verdict.reason = check.reason
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
        plan = f"large-case plan: {reference.plan}" if reference.plan else "full plan"
        verdict.message = (f"correct on {len(reference.cases)} cases ({len(seeds)} size(s) {per_size}; "
                           f"{plan}); launches: {kernels}")
    return verdict


def refuse_tf32_beyond_eager(task: Task, tf32_follows_eager: bool) -> bool:
    """Whether an fp32 output that passes only by the TF32 allowance of a convolution, where eager
    computed it in fp32 on this GPU, is refused (correctness.TF32_BEYOND_EAGER_REFUSAL): with the
    verifier's `tf32_follows_eager`, unless the task itself lists "tf32" (then TF32 is the task's own
    allowance, not one inferred from eager)."""
    return tf32_follows_eager and "tf32" not in task.precisions


def case_label(case: dict[str, Any]) -> str:
    sizes = ", ".join(f"{k}={v}" for k, v in case["sizes"].items()) or "file sizes"
    return f"case [{sizes}; seed {case['model_seed']}]"


def violations(report: StaticReport) -> str:
    return "\n".join(str(v) for v in report.violations)


def reject(verdict: Verdict, message: str) -> Verdict:
    verdict.status, verdict.message = Status.REJECTED, message
    return verdict


def _with_mutations(reference: Reference, result: dict[str, Any], index: int,
                    got: dict[str, Any]) -> dict[str, Any]:
    """Case `index`'s report with the inputs its calls left changed (S7), judged here: their checks after
    each call against the reference's. (The child compared them with its pristine copy until verifier
    2.8: a candidate that changed that copy in step with its own hid the mutation.)"""
    if reference.input_checks is None:
        return got  # a Reference built by hand (tests): the report says
    returned = ((result.get("inputs_seen") or {}).get("returned") or {}).get(index, [])
    return {**got, "mutated_inputs": mutated_inputs(reference.input_checks[index], returned)}


def instrument_problem(result: dict[str, Any]) -> str:
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


def timing_outputs_problem(task: Task, reference: Reference, result: dict[str, Any],
                           tf32_follows_eager: bool = True) -> str:
    """timing_outputs_check's message: '' where every set passes."""
    return timing_outputs_check(task, reference, result, tf32_follows_eager).message


def timing_outputs_check(task: Task, reference: Reference, result: dict[str, Any],
                         tf32_follows_eager: bool = True) -> Comparison:
    """The untimed outputs on each timing set against the reference, by compare_case's rule
    (`tf32_follows_eager`: judge_correctness's): the timed calls are held to these outputs, so a
    rule left out here is one a candidate escapes by switching after its checked cases (exact fp32
    there, TF32 dots once the timing starts). A set the reference child found equal to its case's
    expected outputs (None), and the candidate child found equal to its own outputs for that case
    (None), is the case's check again: nothing left to compare."""
    timing_sets = reference.timing_sets or []
    if len(result["timing_outputs"]) != len(timing_sets):
        return Comparison(False, f"{len(result['timing_outputs'])} untimed output sets came back for "
                          f"{len(timing_sets)} timing sets")
    meta = eager_precision(task.meta, reference.eager_tf32)
    refuse_tf32 = refuse_tf32_beyond_eager(task, tf32_follows_eager)
    total = Comparison(True)
    sets = zip(timing_sets, reference.timing_expected, result["timing_outputs"], strict=True)
    for k, (i, ref, out) in enumerate(sets):
        if ref is None and out is None:
            continue
        ref = reference.expected[i]["outputs"] if ref is None else ref
        out = result["cases"][i]["outputs"] if out is None else out
        # eager's error, whether it was measured, and the float64 floor on the same inputs (under the
        # case's own weights: the closest measured; same shapes, so cuDNN's choice of TF32 or fp32)
        measured = reference.expected[i]
        check = compare_outputs(ref, out, meta, f"timing input set {k}", measured.get("eager_errors"),
                                measured.get("reference_errors"), bool(measured.get("eager_measured")),
                                refuse_tf32)
        total.flags += [f for f in check.flags if f not in total.flags]
        if not check.ok:
            return check
    return total


def timed_tolerances(task: Task, reference: Reference, tf32_follows_eager: bool = True) -> list[list[tuple]]:
    """Per timing set, per output, the (atol, rtol) a timed call's output is held to against the
    untimed one where the candidate's repeats differ (timing.py): what timing_outputs_check holds
    the untimed output to against the reference (correctness.held_tolerance), so the two checks
    together bound the timed outputs as the cases are bounded."""
    meta = eager_precision(task.meta, reference.eager_tf32)
    refuse_tf32 = refuse_tf32_beyond_eager(task, tf32_follows_eager)
    tolerances = []
    for i in reference.timing_sets or []:
        expected = reference.expected[i]
        n = len(expected["outputs"])
        eager = expected.get("eager_errors") or [0.0] * n
        floors = expected.get("reference_errors") or [0.0] * n
        held = [held_tolerance(ref.dtype, meta, eager[j], floors[j], bool(expected.get("eager_measured")),
                               refuse_tf32) for j, ref in enumerate(expected["outputs"])]
        tolerances.append([(t.atol, t.rtol) for t in held])
    return tolerances


def add_flags(flags: list[str], more: list[str]) -> None:
    """`more`'s flags whose kind (the name before the colon) `flags` lacks: the timing sets' check
    repeats the cases' flags, some with other numbers (tf32_beyond_eager with the knob off)."""
    kinds = {f.split(":", 1)[0] for f in flags}
    flags += [f for f in more if f.split(":", 1)[0] not in kinds]


def timing_problems(mine: dict[str, Any], timing: dict[str, Any]) -> str:
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


def log_excerpt(tail: str, chars: int = 1500) -> str:
    tail = tail.strip()
    return f"\n--- process output (tail) ---\n{tail[-chars:]}" if tail else ""
