"""The jobs of a verifier child that run no candidate code: `probe` (the device's name, L2 size and
library versions) and `baseline` (eager and torch.compile of the reference, timed interleaved).
child.py holds the job table; the reference job stays there (it shares the candidate's bitwise
comparison)."""

from __future__ import annotations

import os
from typing import Any

import torch

from mtmc.tasks.task import Task
from mtmc.verify import overlap, timing_gpu
from mtmc.verify.case_io import (
    PhaseClock,
    as_list,
    default_backend_flags,
    load_inputs,
    one_gpu_mode,
    reference_model,
    timing_sets,
    to_device,
)
from mtmc.verify.timing import TimingOptions, time_calls


def probe(device: str) -> dict[str, Any]:
    import triton

    info = {"torch": str(torch.__version__), "triton": triton.__version__,
            "device": "cpu (triton interpreter)"}
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        info.update(device=torch.cuda.get_device_name(0), l2_bytes=getattr(props, "L2_cache_size", 0),
                    sms=props.multi_processor_count, memory_bytes=props.total_memory,
                    capability=list(torch.cuda.get_device_capability(0)))
    return info


def baseline(task_name: str, task_source: str, inputs_path: str, timing: dict[str, Any],
             compiled: bool, timing_lock: str | None = None, case: dict[str, Any] | None = None,
             gate: str | None = None) -> dict[str, Any]:
    """Eager and torch.compile times of the reference on the candidate's timing inputs, with
    PyTorch's default backend flags (returned under "backend_flags"). Shared mode (timing_gpu.py):
    all of it on the timing GPU, the timing under its lock (torch.compile's minutes are not).
    With a `gate` (overlap.py), the timing `case`'s model is built and compiled first, while the
    reference runs; the rest waits until the main process opens the gate (ABORT: no result)."""
    with timing_gpu.timing_device(timing_lock):
        return _baseline(task_name, task_source, inputs_path, timing, compiled, timing_lock, case, gate)


def _baseline(task_name: str, task_source: str, inputs_path: str, timing: dict[str, Any],
              compiled: bool, timing_lock: str | None, early_case: dict[str, Any] | None,
              gate: str | None) -> dict[str, Any]:
    backend_flags = default_backend_flags()
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")  # no compile pools in a child
    clock = PhaseClock()
    task = Task(name=task_name, source=task_source)
    early = None
    if gate is not None:
        early = overlap.early_compile(task, early_case, compiled)
        clock.lap("early_compile")  # beside the reference job
        word = overlap.wait_gate(gate)
        clock.lap("gate")
        if word != overlap.GO:
            return {"aborted": True, "phases_s": clock.phases}
    # one-GPU mode: this job runs whole under the GPU's lock, so it has the GPU to itself and its
    # inputs stay there if they fit its free memory (a 2-4 GiB set parked by the workers' split share
    # crossed PCIe at every call: 5 s of the baselines' timing on an H200, 2026-11-28)
    data = load_inputs(inputs_path, "cuda", timing_only=True, alone=one_gpu_mode())
    case = data["cases"][data["timing"]["case"]]
    if early is not None and not overlap.same_case(early, case):
        early = None  # never expected: the main process drew both from one plan
        torch._dynamo.reset()
    model = early.model if early is not None else reference_model(task, case, "cuda")
    sets = timing_sets(data, "cuda")
    clock.lap("inputs")

    def runner(module: Any):
        def call(inputs: list[Any]) -> list[torch.Tensor]:
            with torch.no_grad():
                return as_list(module(*inputs))
        return call

    result: dict[str, Any] = {"compile_error": None, "backend_flags": backend_flags, "phases_s": clock.phases}
    if early is not None and early.compiled is not None:
        try:  # finish the early compile (its deferred benchmarks, now alone on the GPU)
            runner(early.compiled)(to_device(sets[0], "cuda"))
            torch.cuda.synchronize()
        except Exception:  # whatever went wrong there: compile from scratch below, as without it
            torch._dynamo.reset()
            model, early = reference_model(task, case, "cuda"), None
    calls = {"eager": runner(model)}
    if compiled:
        try:
            compiled_call = runner(early.compiled if early is not None and early.compiled is not None
                                   else torch.compile(model))
            compiled_call(to_device(sets[0], "cuda"))  # compile now, so a failure is reported, not timed
            torch.cuda.synchronize()
            calls["compiled"] = compiled_call
        except Exception as err:  # an op inductor cannot compile: eager only, and say why
            result["compile_error"] = f"{type(err).__name__}: {err}"[:500]
    clock.lap("compile")
    with timing_gpu.on_timing_device(timing_lock):
        result.update(time_calls(calls, sets, {}, True, TimingOptions(**timing)))
    clock.lap("timing")
    return result
