"""The job functions a forked child runs (forkserver.py calls them by name from JOBS).

- `probe`: the device's name, L2 size and library versions.
- `reference` (no candidate code runs here): the task's Model on every case; writes the inputs for the
  candidate, returns the expected outputs and the errors a tolerance may widen to (correctness.py).
- `candidate`: loads the candidate from a real .py file with the proof-of-work instruments
  installed first, runs every case twice, reports outputs and what it saw; on a GPU also the
  Triton share of device time and the timing. It never compares against the reference: it has
  none. Everything it returns is data the main process judges.
- `baseline`: times eager and torch.compile of the reference, interleaved (no candidate code).
- `tree_batch`: many programs of one task, for programs one trusts (the template coder's, when a
  tree is recorded): trusted_batch.py.

`probe` and `baseline` live in trusted_jobs.py, a case's inputs and models in case_io.py, the
state check's walk over what a candidate keeps in kept_state.py, a forward under the
op census in census_calls.py.

Every result is a dict of plain values and CPU tensors (torch.load(weights_only=True) reads it).
Exceptions from the candidate become {"error": ...} results; exceptions from this file's own code
escape, and the fork server reports them as harness errors.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import torch

from mtmc.tasks.task import Task
from mtmc.verify import proof, timing_gpu
from mtmc.verify.bitwise import same
from mtmc.verify.candidate_load import candidate_traceback, error_kind, import_candidate
from mtmc.verify.case_io import (
    EAGER_TF32_OPS,
    OpNames,
    PhaseClock,
    as_list,
    candidate_model,
    case_inputs,
    eager_errors,
    fingerprint,
    fresh_copy,
    load_inputs,
    output_kind,
    poison,
    precise_reference,
    reference_errors,
    reference_model,
    run_forward,
    sized,
    timing_sets,
)
from mtmc.verify.census_calls import CallAudit, censused
from mtmc.verify.kept_state import changes as kept_changes
from mtmc.verify.kept_state import digests as kept_digests
from mtmc.verify.kept_state import persistent_tensors
from mtmc.verify.output_seals import OutputSeals
from mtmc.verify.policy import allowed_aten
from mtmc.verify.pristine import NO_AUDIT, CallInputs, InputCheck
from mtmc.verify.scrub import FreeMemoryScrub, Scrubbed
from mtmc.verify.timing import TimingOptions, time_calls
from mtmc.verify.transport import host_copy
from mtmc.verify.trusted_batch import tree_batch
from mtmc.verify.trusted_jobs import baseline, probe


# ------------------------------------------------------------------------------------------------
# reference
# ------------------------------------------------------------------------------------------------
def reference(task_name: str, task_source: str, cases: list[dict[str, Any]], device: str,
              inputs_path: str, timing_sets: list[int] | None, check_key: int = 0) -> dict[str, Any]:
    """Expected outputs of every case; the cases' seeds and input fingerprints go to `inputs_path`, their
    keyed checks (pristine.py; never into that file) to the main process."""
    precise_reference()
    task = Task(name=task_name, source=task_source)
    saved_cases, expected, all_inputs, input_checks = [], [], [], []
    checks = InputCheck(check_key)
    eager_tf32 = seeded = False
    floor_failures: list[str] = []  # float64 forwards that failed (their floors read 0)
    clock = PhaseClock()  # summed over the cases: where a large task's reference time goes
    for index, case in enumerate(cases):
        model = reference_model(task, case, device)
        inputs = case_inputs(task, case, device)
        clock.lap("inputs")
        if index == 0:
            with OpNames() as seen:
                raw = run_forward(model, inputs)
            eager_tf32, seeded = bool(seen.names & EAGER_TF32_OPS), seen.seeded
        else:
            raw = run_forward(model, inputs)
        outputs = as_list(raw)
        clock.lap("forward")
        on_tf32 = eager_tf32 and device == "cuda"  # only there eager and the reference differ
        errors = eager_errors(model, inputs, outputs) if on_tf32 else [0.0] * len(outputs)
        clock.lap("eager_errors")
        floors = reference_errors(model, inputs, outputs, floor_failures) if not seeded else \
            [0.0] * len(outputs)  # no twin
        clock.lap("reference_errors")
        expected.append({"kind": output_kind(raw), "outputs": [host_copy(o) for o in outputs],
                         "eager_errors": errors, "eager_measured": on_tf32, "reference_errors": floors})
        clock.lap("to_host")
        all_inputs.append(inputs)
        saved_cases.append({**case, "init_inputs": task.init_inputs(case["sizes"]),
                            "fingerprint": fingerprint(inputs),
                            "out_meta": [[list(o.shape), str(o.dtype)] for o in outputs]})
        input_checks.append(checks.values(inputs))
        clock.lap("fingerprint")
    timing = None
    timing_expected = None
    if timing_sets:  # the first case's model on each timing set's inputs (see timing.py)
        model = reference_model(task, cases[0], device)
        timing_expected = [_unless_same(as_list(run_forward(model, all_inputs[i])), expected[i]["outputs"])
                           for i in timing_sets]
        timing = {"case": 0, "sets": timing_sets}
        clock.lap("timing_sets")
    # Only seeds and fingerprints are saved: every child regenerates the inputs on its device
    # (GPU-sized inputs are GBs; writing and reading them back cost more than the verdict itself).
    torch.save({"task_name": task_name, "task_source": task_source, "cases": saved_cases, "timing": timing},
               inputs_path)
    clock.lap("save")
    return {"expected": expected, "timing_expected": timing_expected, "eager_tf32": eager_tf32,
            "phases_s": clock.phases, "floor_failures": floor_failures,
            "input_checks": input_checks}


def _unless_same(outputs: list[torch.Tensor], case_outputs: list[torch.Tensor]) -> list[torch.Tensor] | None:
    """The outputs on the host, or None when they equal (bitwise) the outputs of the case whose
    inputs they ran on: then the case's check covers them, and GBs need not travel twice."""
    if len(outputs) == len(case_outputs) and all(
            same(o, c) for o, c in zip(outputs, case_outputs, strict=True)):
        return None
    return [host_copy(o) for o in outputs]


# ------------------------------------------------------------------------------------------------
# candidate
# ------------------------------------------------------------------------------------------------
def candidate(source: str, digest: str, inputs_path: str, device: str, library_ops: list[str],
              time_it: bool, timing: dict[str, Any], profile_share: bool,
              schedule: list[int] | None = None, timing_lock: str | None = None,
              timed_tolerances: list[list[tuple[float, float]]] | None = None, *,
              check_key: int) -> dict[str, Any]:
    precise_reference()  # vendor calls a task allows run at the reference's precision
    path = Path.cwd() / f"candidate_{digest}.py"
    path.write_text(source)
    counter = proof.LaunchCounter(str(path)).install()
    watched = proof.snapshot_identities()  # includes our own wrappers: restoring Triton's is tampering
    threads_before = threading.active_count()
    clock = PhaseClock()
    data = load_inputs(inputs_path, device)  # before the candidate's code runs
    # what each call receives (pristine.py; S21); the free GPU memory overwritten then (scrub.py; S23)
    audit = Scrubbed(CallInputs(check_key, data["cases"]), FreeMemoryScrub(device))
    seals = OutputSeals(check_key)  # what each call returned, digested right after it (output_seals.py; S22)
    del data["task_source"]  # the reference's source stays out of the frames a candidate could read (S19)
    clock.lap("inputs")
    try:
        module = import_candidate(path, digest)
    except BaseException as err:  # the candidate's import failed: a compile error
        return {"error": "compile_error", "message": candidate_traceback(err, path)}
    result: dict[str, Any] = {"cases": [], "launches": {}, "phases_s": clock.phases}
    clock.lap("import")
    census_allowed = allowed_aten(library_ops)
    schedule = schedule or [i for i in range(len(data["cases"])) for _ in range(2)]
    try:
        result["cases"] = _run_schedule(module, data["cases"], schedule, device, counter, census_allowed,
                                        audit, seals)
    except BaseException as err:
        return {**result, "error": error_kind(err), "case": getattr(err, "case", 0),
                "message": candidate_traceback(err, path)}
    clock.lap("cases")  # the first case pays CUDA's start and the Triton compiles
    # Every later forward runs under the census too: a candidate that finds no census active (a
    # dispatch stack it can read) must not get a PyTorch path into the state check or the timing.
    others = CallAudit(counter, census_allowed)
    try:
        result["state_changes"] = _state_changes(module, data["cases"], device, others, audit, seals)
    except BaseException as err:
        return {**result, "error": error_kind(err), "message": candidate_traceback(err, path)}
    result["launches"] = dict(counter.kernels)
    if device == "cuda" and (profile_share or time_it):
        try:
            _gpu_measurements(result, module, data, others, time_it, timing, profile_share, clock,
                              timing_lock, timed_tolerances, audit, seals)
        except BaseException as err:
            return {**result, "error": error_kind(err), "message": candidate_traceback(err, path)}
    result["other_calls"] = others.report()
    result["inputs_seen"] = audit.report()
    result["outputs_seen"] = seals.report()
    result["tampered"] = proof.changed_identities(watched)
    result["threads_started"] = threading.active_count() - threads_before
    result["threads_spawned"] = counter.threads_spawned
    result["counter_forged"] = not counter.consistent()
    return result


def _run_schedule(module: Any, cases: list[dict[str, Any]], schedule: list[int], device: str,
                  counter: proof.LaunchCounter, allowed: frozenset[str],
                  audit: CallInputs = NO_AUDIT, seals: OutputSeals | None = None) -> list[dict[str, Any]]:
    """Run the forward calls in the verifier's order (protocol.py). A case's first call gives its
    outputs; every later call of it, on the same model object, must return exactly those (the
    determinism check and the repeats). Raises with `.case` set when a call raises."""
    seals = seals or OutputSeals(0)  # a test's call alone: a record of its own
    last = {index: position for position, index in enumerate(schedule)}
    models: dict[int, torch.nn.Module] = {}
    reports: dict[int, dict[str, Any]] = {}
    for position, index in enumerate(schedule):
        case = cases[index]
        try:
            with sized(module, case["sizes"]):
                if index not in models:
                    models[index] = candidate_model(module, case, device)
                run = _call(models[index], case, device, counter, allowed, audit, seals)
        except BaseException as err:
            err.case = index
            raise
        if index not in reports:
            reports[index] = _first_report(run)
            seals.first(index, run["digest"])  # later calls compare with this digest; no output is kept
        else:
            _add_repeat(reports[index], run, index, seals)
        if last[index] == position:  # the case's last call: free its model
            del models[index]
    return [reports[i] for i in range(len(cases))]


def _call(model: torch.nn.Module, case: dict[str, Any], device: str, counter: proof.LaunchCounter,
          allowed: frozenset[str], audit: CallInputs, seals: OutputSeals) -> dict[str, Any]:
    """One forward call of a case under the census, with the instruments read before and after. Its
    inputs are checked before it (were they the reference's?) and after it (did it change them? S7):
    against the reference's values, not the pristine copy, which the candidate could change in step.
    Its outputs are digested right after it, before any more candidate code runs (S22)."""
    inputs = audit.before(case, fresh_copy(case["inputs"], device))  # the pristine copy is never handed out
    poison(case["out_meta"], device)  # last allocations before the call: its outputs land here
    raw, seen = censused(model, inputs, counter, allowed)
    if device == "cuda":
        torch.cuda.synchronize()
    audit.after(case, inputs)
    return {"raw": raw, "inputs": inputs, "digest": seals.digest(as_list(raw)), **seen}


def _first_report(run: dict[str, Any]) -> dict[str, Any]:
    report = _describe_outputs(run["raw"])
    report["launches"] = [run["launches"]]
    report["foreign_ops"] = dict(run["foreign"])
    report["host_exits"] = dict(run["host_exits"])
    report["census_broken"] = run["census_broken"]
    report["deterministic"], report["second_outputs"] = True, None
    return report


def _add_repeat(report: dict[str, Any], run: dict[str, Any], index: int, seals: OutputSeals) -> None:
    """A repeat of case `index` is compared with its first call by their digests (output_seals.py). The
    first call's outputs are not kept to compare with: the candidate can hold them, and change them
    before its repeat (verifier 2.9; before, the first's own tensors, or the host copy of GB-sized
    ones, were compared)."""
    report["launches"].append(run["launches"])
    report["foreign_ops"].update(run["foreign"])
    report["host_exits"].update(run["host_exits"])
    report["census_broken"] = report["census_broken"] or run["census_broken"]
    if report["deterministic"] and not seals.repeats_first(index, run["digest"]):  # the first that differs
        report["deterministic"], report["second_outputs"] = False, _second_outputs(report, run)
        seals.second(index, run["digest"])  # what the main process holds the travelling outputs to


def _state_changes(module: Any, cases: list[dict[str, Any]], device: str, forward: CallAudit,
                   audit: CallInputs = NO_AUDIT, seals: OutputSeals | None = None) -> list[str]:
    """Where state that outlives a call changed when one model saw new inputs (empty: none did).

    One model runs on one case's inputs, then on another seed's of the same sizes. A forward is a
    function of its weights and inputs: tensors it keeps between calls (on the module, in containers
    on it, in the candidate module's globals) may be made once, but what they hold must not depend on
    the inputs. A result cache keyed on the inputs' contents does (S11: the timing input sets repeat,
    so it would hit on every timed call), whether the key is read on the host or compared on the
    device; so does state carried across calls (S10).

    What it keeps is compared by keyed digests (output_seals.py), taken right after each call: a clone
    kept through the second call (until verifier 2.9) was memory a kernel could copy its new state into.
    Each kept tensor by its whole storage, kept storages too, and a kept address is reported as one
    (kept_state.py; verifier 2.11)."""
    pair = _state_pair(cases)
    if not pair:
        return []
    first, second = pair
    digest = (seals or OutputSeals(0)).check.tensor
    with sized(module, first["sizes"]):
        model = candidate_model(module, first, device)
        forward(model, audit.before(first, fresh_copy(first["inputs"], device)))
        before = kept_digests(persistent_tensors(model, module), digest)
        # checked: the second seed's pristine inputs overwritten with the first's would hide any cache
        forward(model, audit.before(second, fresh_copy(second["inputs"], device)))
        after = kept_digests(persistent_tensors(model, module), digest)
    return kept_changes(before, after)


def _state_pair(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The state check's two cases: the first two of the first size that has two seeds (on the full
    plan the declared size; on the large-case plan, whose declared size has one seed, the small
    size: trusted.py), else none (a single seed)."""
    for case in cases:
        pair = [c for c in cases if c["sizes"] == case["sizes"]][:2]
        if len(pair) == 2:
            return pair
    return []


def _describe_outputs(raw: Any) -> dict[str, Any]:
    """Outputs as plain CPU tensors, with anything that is not exactly a torch.Tensor named."""
    outputs = as_list(raw)
    bad = [f"output {i} is {type(o).__module__}.{type(o).__qualname__}, not exactly torch.Tensor"
           for i, o in enumerate(outputs) if type(o) is not torch.Tensor]
    if bad:
        return {"kind": output_kind(raw), "type_errors": bad, "outputs": [], "devices": []}
    return {"kind": output_kind(raw), "type_errors": [], "outputs": [_host_copy(o) for o in outputs],
            "devices": [str(o.device) for o in outputs]}


def _host_copy(tensor: torch.Tensor) -> torch.Tensor:
    """A CPU copy the candidate's later calls cannot reach: a GB-sized GPU output goes straight to its
    raw file through pinned buffers (transport.host_copy), a CPU tensor is cloned."""
    return host_copy(tensor)


def _second_outputs(report: dict[str, Any], run: dict[str, Any]) -> list[torch.Tensor] | None:
    """A repeat that differs from its first call: its outputs, on the host for the main process to
    judge (compare_runs), unless either side is not exactly tensors (the case fails on its types)."""
    if report["type_errors"] or run["digest"] is None:
        return None
    return [_host_copy(y) for y in as_list(run["raw"])]


def _gpu_measurements(result: dict[str, Any], module: Any, data: dict[str, Any], forward: CallAudit,
                      time_it: bool, timing: dict[str, Any], profile_share: bool, clock: PhaseClock,
                      timing_lock: str | None, tolerances: list[list[tuple[float, float]]] | None,
                      audit: CallInputs, seals: OutputSeals) -> None:
    home_stream = torch.cuda.current_stream().cuda_stream  # the correctness runs' stream
    with timing_gpu.on_timing_device(timing_lock):  # shared mode (timing_gpu.py): the timing GPU, alone
        counter = forward.counter
        model = candidate_model(module, data["cases"][data["timing"]["case"]], "cuda")
        sets = timing_sets(data, "cuda")
        # every input the stage hands over is checked first, each timed call's restored buffers too, and
        # the free memory scrubbed (audit: scrub.Scrubbed): `loaded` runs right before each timed call
        cases = [data["cases"][i] for i in data["timing"]["sets"]]
        checked = lambda k, inputs: audit.before(cases[k], inputs)  # noqa: E731

        def call(inputs: list[Any]) -> list[torch.Tensor]:
            # Under the census like a case's call: its host cost is hidden by the pre-call sleep.
            return as_list(forward(model, inputs))

        # The untimed calls each get a copy of their set (from the host where the sets wait there,
        # case_io.timing_sets), made before the call (outside the profile) and gone after it: the sets
        # are what the timing loop restores its buffers from, so the candidate never holds them.
        if profile_share:
            first = partial(call, checked(0, fresh_copy(sets[0], "cuda")))  # the copy goes after the profile
            # the census's live tally, not a copy: a Triton kernel first launched inside the profile (a
            # call on an input object it has seen before, S23) is still the candidate's own; what such a
            # call returns is judged by the timed-output recheck, not mislabelled as foreign compute
            result["share"] = proof.triton_share(first, counter.kernels)
            del first
            clock.lap("profile")
        if time_it:
            # untimed outputs, judged by the main process, each digested right after its call
            own = untimed_outputs(call, sets, "cuda", checked, seals.untimed_call)
            torch.cuda.synchronize()
            result["timing_outputs"] = [seals.unless_first(k, i, outs) for k, (i, outs)
                                        in enumerate(zip(data["timing"]["sets"], own, strict=True))]
            exact = all(c["deterministic"] for c in result["cases"])
            ours = {home_stream, torch.cuda.current_stream().cuda_stream}  # (shared mode: two GPUs)
            side_before = counter.streams - ours  # from the correctness runs
            # unless exact, each timed output within what its untimed one is held to (timing.py)
            result["timing"] = time_calls({"candidate": call}, sets, {"candidate": own}, exact,
                                          TimingOptions(**timing, hide_host_overhead=not side_before),
                                          tolerances, loaded=checked,
                                          held=lambda k: seals.hold(k, own[k]))  # after each comparison
            side = counter.streams - ours
            result["timing"]["side_streams"] = sorted(side)
            result["timing"]["side_streams_late"] = bool(side) and not side_before
            clock.lap("timing")


def untimed_outputs(call: Callable[[list[Any]], list[torch.Tensor]], sets: list[list[Any]],
                    device: str, checked: Callable[[int, list[Any]], list[Any]] = lambda k, inputs: inputs,
                    seen: Callable[[int, list[torch.Tensor]], None] = lambda k, outputs: None
                    ) -> list[list[torch.Tensor]]:
    """The candidate's outputs on each timing set, each call on its own copy of the set (`checked`
    before the call), cloned and `seen` (digested: output_seals.py) before the next call can reach them.
    Before verifier 2.7 a set that fit the GPU was handed over itself: a candidate could write into it
    (its result, say) and every timed call, its buffers restored from the set, read that instead."""
    own = []
    for k, s in enumerate(sets):
        own.append([o.clone() for o in call(checked(k, fresh_copy(s, device)))])
        seen(k, own[k])
    return own



JOBS = {"probe": probe, "reference": reference, "candidate": candidate, "baseline": baseline,
        "tree_batch": tree_batch}
