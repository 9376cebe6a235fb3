"""The `tree_batch` job: many programs of one task judged in one child, for programs one trusts.

Recording a tree (mtmc/tree/recorder.py) judges thousands of programs that the embedded template
coder wrote: code of this project, not an LLM's. Through the full protocol each verdict regenerates
its task's inputs in a fresh child, runs every case twice under the op census, profiles and times,
and ships GB-sized outputs back to the main process to compare: on an H100 the built-in suite took
a median 33 s a verdict, mostly moving data (BENCHMARKS.md, seventh session). This job pays the
per-task part once per batch instead: it regenerates the inputs once, recomputes the reference's
outputs on the device once (the reference's own model, seeds and inputs: the same values the main
process holds), and then, per program, imports it, runs each case once, compares with the
verifier's own rules (correctness.compare_case, with the reference's eager and float64 error
floors passed in) and times it with the verifier's own loop (timing.time_calls; in shared mode on
the timing GPU, under its lock).

What it leaves out, because it guards against hostile code: the sandbox (the job is not in
sandbox.UNTRUSTED_JOBS), the op census and launch counter, the decoy and state checks, the
determinism repeats and the profile. Verdicts made here carry the flag `trusted_batch`, and
`mtmc tree record judge=batch` refuses any coder but the template coder. batch.py builds the
verdicts (baselines, roofline floor) in the main process.

One-GPU mode (`gpu_lock`, timing_gpu.py): the GPU's lock is held for the batch's setup, then per
program for its cases and timing, and only then; each program's kernels are compiled before, outside
it (compile_pass.py), while other jobs' programs run. The per-program cost, on one GPU with N jobs:
    outside the lock: import (~ms) + compile pass (the program's new kernels: seconds of CPU)
    under the lock:   its cases (the kernels, the comparisons with the reference) + its timing loop
                      (warmup_ms, then reps until target_rse, max_reps or budget_s) + its share of
                      the batch's setup (the inputs and reference outputs, made once a batch)
so the GPU is the bound while N x (locked time) >= (outside + locked time), and the recorder's
rate is then 60 / (locked seconds a program) a minute, plus the main process's locked jobs (each
task's reference and baselines, once; docs/design.md "The program tree").
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import torch

from mtmc.tasks.task import Task
from mtmc.verify import compile_pass, timing_gpu
from mtmc.verify.bitwise import same
from mtmc.verify.candidate_load import candidate_traceback, error_kind, import_candidate
from mtmc.verify.case_io import (
    as_list,
    candidate_model,
    fresh_copy,
    output_kind,
    precise_reference,
    read_inputs,
    reference_model,
    regenerate,
    resident_budget,
    run_forward,
    sized,
    timing_sets,
)
from mtmc.verify.correctness import Comparison, compare_case, eager_precision
from mtmc.verify.judging import case_label
from mtmc.verify.timing import TimingOptions, time_calls


def tree_batch(task_name: str, task_source: str, inputs_path: str, device: str,
               programs: list[dict[str, Any]], errors: list[dict[str, Any]], eager_tf32: bool,
               time_it: bool, timing: dict[str, Any], timing_lock: str | None = None,
               refuse_tf32: bool = False, gpu_lock: str | None = None) -> dict[str, Any]:
    """Each program's result ({"status", "message", errors, "timing", "phases_s"}), in order.
    `errors`: each case's {"eager_errors", "reference_errors", "eager_measured"} from the main
    process's reference. `refuse_tf32`: judging.refuse_tf32_beyond_eager, as the full protocol's.
    `gpu_lock`: one-GPU mode's lock (above); `timing_lock`: shared mode's (timing_gpu.py)."""
    started = time.perf_counter()
    precise_reference()
    task = Task(name=task_name, source=task_source)
    saved = read_inputs(inputs_path)
    _open_device(device, gpu_lock)
    asked = time.perf_counter()
    host_s = asked - started  # before the lock: reading the cases, the task's module, CUDA's context
    with timing_gpu.gpu_section(gpu_lock):
        waited = time.perf_counter() - asked
        data = regenerate(saved, device)
        expected = _expected(task, data["cases"], errors, device, _outputs_room(data, device, gpu_lock))
    setup_s = round(time.perf_counter() - asked - waited, 4)
    # the verifier's rule for one case, as the full protocol applies it (judging.judge_correctness)
    rule = partial(compare_case, meta=eager_precision(task.meta, eager_tf32), tf32_follows_eager=refuse_tf32)
    results = []
    for program in programs:
        results.append(_judge_one(program, data, expected, rule, device, time_it, timing, gpu_lock,
                                  timing_lock))
    return {"results": results, "setup_s": setup_s, "setup_wait_s": round(waited, 4),
            "setup_host_s": round(host_s, 4)}


def _open_device(device: str, gpu_lock: str | None) -> None:
    """One-GPU mode: CUDA's context made before the lock is asked for (host and driver work, no
    kernel: a second or so of a child's start, which under the lock left the GPU idle)."""
    if gpu_lock is not None and device.startswith("cuda"):
        torch.empty(1, device=device)  # an allocation creates the context; nothing runs on the GPU


def _outputs_room(data: dict[str, Any], device: str, gpu_lock: str | None) -> float:
    """Bytes of the reference's outputs that may stay on the device. One-GPU mode: what the job's
    share (resident_budget) leaves beside its resident inputs, so that inputs and outputs together
    keep to it: the share is raised there to hold both (benchmarks/tree_one_gpu.sh), and the workers'
    shares with the locked job's working memory must fit the GPU. Else the share, as before."""
    budget = resident_budget(device)
    if gpu_lock is None:
        return budget
    held = sum(t.nbytes for case in data["cases"] for t in case.get("inputs", [])
               if isinstance(t, torch.Tensor) and t.device.type != "cpu")
    return max(0.0, budget - held)


def _expected(task: Task, cases: list[dict[str, Any]], errors: list[dict[str, list[float]]],
              device: str, room: float) -> list[dict[str, Any]]:
    """The reference's outputs on every case, made here from its model and inputs, with the error
    floors the main process measured. They stay on the device while they fit `room` bytes, else on
    the host (the comparison then stages them over in chunks)."""
    expected, kept = [], 0
    for case, floors in zip(cases, errors, strict=True):
        raw = run_forward(reference_model(task, case, device), fresh_copy(case["inputs"], device))
        outputs = [o.detach() for o in as_list(raw)]
        kept += sum(o.nbytes for o in outputs)
        if kept > room:  # this case's outputs wait on the host, before the next is made
            outputs = [o.cpu() for o in outputs]
        expected.append({"kind": output_kind(raw), "outputs": outputs, **floors})
        del raw
    return expected


def _judge_one(program: dict[str, str], data: dict[str, Any], expected: list[dict[str, Any]],
               rule: Callable[..., Comparison], device: str, time_it: bool, timing: dict[str, Any],
               gpu_lock: str | None, timing_lock: str | None) -> dict[str, Any]:
    """One program judged. At most one lock is set: one-GPU mode's `gpu_lock` around its kernels (its
    compiles before it, outside), or shared mode's `timing_lock` around its timing on the timing GPU."""
    started = time.perf_counter()
    path = Path.cwd() / f"candidate_{program['digest']}.py"
    path.write_text(program["source"])
    try:
        module = import_candidate(path, program["digest"])
    except BaseException as err:  # noqa: BLE001  (any failure to import is the program's compile error)
        return {"status": "compile_error", "message": candidate_traceback(err, path)}
    try:
        phases, notes = {}, []
        if gpu_lock is not None and device == "cuda":  # its kernels compiled before the lock is taken
            done = compile_pass.compile_cases(partial(_forward, module, device), data["cases"], device,
                                              compile_pass.stand_in_room)
            phases["compile"] = round(time.perf_counter() - started, 4)
            notes = [done.note] if done.note else []  # what compiled under the lock, and why
        asked = time.perf_counter()
        with timing_gpu.gpu_section(gpu_lock):
            held = time.perf_counter()
            result = _cases(module, data["cases"], expected, rule, device, path)
            result["phases_s"] = {**phases, "cases": round(time.perf_counter() - held, 4)}
            result["flags"] = [*result.get("flags", []), *notes]
            if gpu_lock is not None:
                result["phases_s"]["lock_wait"] = round(held - asked, 4)
            if result["status"] == "ok" and time_it:
                result["timing"] = _time(module, data, timing, timing_lock, result["phases_s"])
        return result
    finally:
        sys.modules.pop(f"mtmc_candidate_{program['digest']}", None)
        if device == "cuda":
            torch.cuda.empty_cache()  # the next program's outputs need the room this one's held


def _forward(module: Any, device: str, case: dict[str, Any], inputs: list[Any]) -> Any:
    """The program's forward on `case` as the cases run it (compile_pass's callable)."""
    with sized(module, case["sizes"]):
        return run_forward(candidate_model(module, case, device), inputs)


def _cases(module: Any, cases: list[dict[str, Any]], expected: list[dict[str, Any]],
           rule: Callable[..., Comparison], device: str, path: Path) -> dict[str, Any]:
    """Every case once, against the reference by correctness.compare_case (the verifier's rule)."""
    worst = {"max_abs_error": 0.0, "rel_error": 0.0}
    flags: list[str] = []
    for case, want in zip(cases, expected, strict=True):
        label = case_label(case)
        inputs = fresh_copy(case["inputs"], device)
        try:
            with sized(module, case["sizes"]):
                raw = run_forward(candidate_model(module, case, device), inputs)
            if device == "cuda":
                torch.cuda.synchronize()
        except BaseException as err:  # noqa: BLE001  (the program's failure, reported as the verifier would)
            if device_broken(err):
                raise  # see device_broken: the batch ends, and batch.py judges its programs one at a time
            return {"status": error_kind(err), "message": f"{label}: {candidate_traceback(err, path)}"}
        check = rule(want, _got(raw, case["inputs"], inputs), expected_device=device, label=label)
        worst["max_abs_error"] = max(worst["max_abs_error"], check.max_abs_error)
        worst["rel_error"] = max(worst["rel_error"], check.rel_error)
        flags += [f for f in check.flags if f not in flags]
        if not check.ok:
            return {"status": "incorrect", "message": check.message, "reason": check.reason, "flags": flags,
                    **worst}
        del raw, inputs
    return {"status": "ok", "message": f"correct on {len(cases)} cases (trusted batch)", "flags": flags,
            **worst}


def device_broken(err: BaseException) -> bool:
    """A CUDA error (an illegal memory access, a device-side assert) leaves this process's CUDA
    context unusable: every later program of the batch would fail for it. Such an error ends the
    batch, so each of its programs gets a fresh child (and the faulty one its own verdict)."""
    return type(err).__name__ == "AcceleratorError" or "CUDA error" in str(err)


def _got(raw: Any, pristine: list[Any], used: list[Any]) -> dict[str, Any]:
    """The candidate's side of compare_case: its outputs where they are, and the inputs it changed."""
    outputs = as_list(raw)
    bad = [f"output {i} is {type(o).__name__}, not a torch.Tensor" for i, o in enumerate(outputs)
           if type(o) is not torch.Tensor]
    mutated = [i for i, (a, b) in enumerate(zip(pristine, used, strict=True))
               if isinstance(a, torch.Tensor) and not same(a, b.to(a.device))]
    return {"kind": output_kind(raw), "type_errors": bad, "outputs": [] if bad else outputs,
            "devices": [] if bad else [str(o.device) for o in outputs], "mutated_inputs": mutated}


def _time(module: Any, data: dict[str, Any], timing: dict[str, Any], timing_lock: str | None,
          phases: dict[str, float]) -> dict[str, Any]:
    """The verifier's timing loop on the timing sets (child._gpu_measurements without the census):
    each set's untimed outputs first, every timed call checked against them (within tolerance: the
    determinism repeats did not run here)."""
    asked = time.perf_counter()
    with timing_gpu.on_timing_device(timing_lock):
        held = time.perf_counter()
        phases["wait"] = round(held - asked, 4)  # for the timing GPU's lock (shared mode)
        sets = timing_sets(data, "cuda")
        call = _forward_of(candidate_model(module, data["cases"][data["timing"]["case"]], "cuda"))
        # each on its own copy: a program that writes into its inputs (refused for it) must not
        # change a set that stays on the device, the batch's later programs' cases and timing inputs
        own = [[o.clone() for o in call(fresh_copy(s, "cuda"))] for s in sets]
        torch.cuda.synchronize()
        measured = time_calls({"candidate": call}, sets, {"candidate": own}, False, TimingOptions(**timing))
        # This process lives on for the batch's next program: hand its blocks on the timing GPU back
        # before the lock goes, or the next job's timing there may not find room.
        del call, own, sets
        torch.cuda.empty_cache()
    phases["timing"] = round(time.perf_counter() - held, 4)
    mine = measured["timings"]["candidate"]
    return {"timings": {"candidate": {k: mine[k] for k in ("reported_ms", "median_ms", "rse", "reps",
                                                            "mismatches", "reused_storage")}},
            "threads_started": measured["threads_started"], "events_ms": measured["events_ms"],
            "wall_ms": measured["wall_ms"]}


def _forward_of(model: torch.nn.Module) -> Any:
    def call(inputs: list[Any]) -> list[torch.Tensor]:
        return as_list(run_forward(model, inputs))
    return call
