"""A case inside a verifier child: its inputs regenerated from their seeds, its models built as
the reference's were, and the plain forms outputs travel in. Shared by the jobs of child.py and
trusted_jobs.py; no candidate code runs here."""

from __future__ import annotations

import contextlib
import copy
import math
import os
import time
from collections.abc import Iterator
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from mtmc.tasks.task import Task, set_mode
from mtmc.verify.correctness import eager_error, reference_error

# The ops eager PyTorch runs on TF32 tensor cores by default (torch.backends.cudnn.allow_tf32):
# `aten::convolution`, where every conv and transposed conv (1d/2d/3d, module or functional) lands,
# and `aten::_cudnn_rnn`, where nn.LSTM / nn.GRU / nn.RNN land on a GPU (on an H100 eager's LSTM
# erred 1.1e-4 against TF32 off on KernelBench 36_LSTMHn: benchmarks/probes/2026-11-26-rnn).
EAGER_TF32_OPS = frozenset({"aten::convolution", "aten::_cudnn_rnn"})


class OpNames(TorchDispatchMode):
    """The aten ops a forward runs (see EAGER_TF32_OPS). `seeded`: some op drew random numbers
    (PyTorch tags those ops `nondeterministic_seeded`: randn, dropout, ...)."""

    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()
        self.seeded = False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.add(func._schema.name)
        self.seeded = self.seeded or torch.Tag.nondeterministic_seeded in func.tags
        return func(*args, **(kwargs or {}))


def case_inputs(task: Task, case: dict[str, Any], device: str) -> list[Any]:
    """The case's inputs from its seed, made on `device` (GPU random numbers are fast to draw)."""
    with torch.device(device):
        return to_device(task.make_inputs(case["input_seed"], case["sizes"]), device)


# Elements summed in float64 at a time. KernelBench's level-1 inputs reach 16 GB of fp32; a whole-tensor
# float64 sum allocated a 32 GB copy and ran a GPU out of memory (45_Average_Pooling_2D on an H100).
FINGERPRINT_CHUNK = 1 << 24


def fingerprint(inputs: list[Any]) -> list[Any]:
    """Shape, dtype and a content summary of each tensor: regenerated inputs must match the reference's."""
    return [tensor_summary(t) if isinstance(t, torch.Tensor) else repr(t) for t in inputs]


def tensor_summary(tensor: torch.Tensor) -> list[Any]:
    """[shape, dtype, float64 sum of the finite values, NaN count, +inf count, -inf count], summed in
    chunks. NaN and infinities are counted rather than summed: a NaN sum never equals itself, so an
    input holding one read as "not deterministic"."""
    flat = tensor.detach().reshape(-1)
    if flat.is_complex():
        flat = torch.view_as_real(flat).reshape(-1)
    total, nan, posinf, neginf = 0.0, 0, 0, 0
    for start in range(0, flat.numel(), FINGERPRINT_CHUNK):
        chunk = flat[start:start + FINGERPRINT_CHUNK].to(torch.float64)
        nan += int(chunk.isnan().sum())
        posinf += int((chunk == float("inf")).sum())
        neginf += int((chunk == float("-inf")).sum())
        total += float(torch.nan_to_num(chunk, nan=0.0, posinf=0.0, neginf=0.0).sum())
    return [list(tensor.shape), str(tensor.dtype), total, nan, posinf, neginf]


def load_inputs(inputs_path: str, device: str, timing_only: bool = False,
                alone: bool = False) -> dict[str, Any]:
    """The saved cases with their inputs regenerated (all, or the timing sets'), checked against the
    reference's fingerprints. Runs before any candidate code is imported, so the inputs are pristine.
    They stay on the device if all of them fit its share (RESIDENT_SHARE); else every case is parked.
    `alone`: a job that has the GPU to itself while it lives (one-GPU mode's locked jobs): its inputs
    stay if they fit half the memory free now (its_room), not the share split between the workers."""
    return regenerate(read_inputs(inputs_path), device, timing_only, alone)


def read_inputs(inputs_path: str) -> dict[str, Any]:
    """The saved cases (seeds, sizes, fingerprints) as the reference job wrote them: host work only,
    which one-GPU mode does before it takes the GPU's lock (trusted_batch.py)."""
    return torch.load(inputs_path, weights_only=True)


def regenerate(data: dict[str, Any], device: str, timing_only: bool = False,
               alone: bool = False) -> dict[str, Any]:
    """load_inputs on cases already read (read_inputs)."""
    task = Task(name=data["task_name"], source=data["task_source"])
    wanted = [i for i in range(len(data["cases"])) if not timing_only or i in data["timing"]["sets"]]
    total = sum(fingerprint_bytes(data["cases"][i]["fingerprint"]) for i in wanted)
    resident = total <= (its_room(device) if alone else resident_budget(device))
    for index in wanted:
        case = data["cases"][index]
        case["inputs"] = case_inputs(task, case, device)
        if fingerprint(case["inputs"]) != case["fingerprint"]:
            raise RuntimeError(f"{task.name}: inputs for seed {case['input_seed']} differ from the "
                               "reference's (get_inputs is not deterministic for a seed); cannot verify")
        if not resident:
            case["inputs"] = _parked(case["inputs"])
    return data


def fingerprint_bytes(summary: list[Any]) -> int:
    """Bytes of the tensors a fingerprint describes ([shape, dtype, ...] each), before they are made."""
    return sum(math.prod(entry[0]) * getattr(torch, entry[1].removeprefix("torch.")).itemsize
               for entry in summary if isinstance(entry, list))


# A case's inputs stay on the device if all the cases' inputs together take at most this share of its
# memory; otherwise every case waits in host memory between its calls (fresh_copy brings a call's copy
# over, to_device a timing set), generated on the device (the reference's values: the CUDA
# generator's), then moved. KernelBench level 1's largest inputs are 8-17 GB a case: with three or four
# cases resident on an H100, plus a call's copy and its outputs, 87_conv_pointwise_2D and
# 45_Average_Pooling_2D ran the candidate's job out of the GPU's 80 GB. Parking every case over 1 GiB
# instead (verifier 2.2) sent the built-in suite's GB-sized cases over PCIe at every call, and its
# verdicts took up to 1.8x as long on an H100 (BENCHMARKS.md, 2026-11-26 fifth session). An eighth
# (10 GB of an H100) holds a built-in task's four cases (2 GB each); level 1's largest stay parked,
# all of them, as under verifier 2.2 (all or none: no resident case adds to a job that ran out).
RESIDENT_SHARE = 0.125
# The verifier's `resident_share` setting, for a worker (verifier.py): a larger share keeps GB-sized
# cases on the device (level 1's largest tasks park 6-17 GB a case at every job: issue 25's latency),
# at the risk the paragraph above describes. Unset: RESIDENT_SHARE.
RESIDENT_SHARE_ENV = "MTMC_RESIDENT_SHARE"


def resident_budget(device: str) -> float:
    """Bytes of case inputs that may stay on `device` (no limit on the host: nothing to park them to).
    In shared mode (timing_gpu.py) the GPU's share is split between the jobs that run on it at once."""
    if not device.startswith("cuda"):
        return float("inf")
    total = torch.cuda.get_device_properties(torch.device(device)).total_memory
    return total * resident_share() / jobs_per_gpu()


def resident_share() -> float:
    """The share of the device's memory case inputs may take: the worker's setting, else RESIDENT_SHARE."""
    value = os.environ.get(RESIDENT_SHARE_ENV)
    return RESIDENT_SHARE if not value else float(value)


def jobs_per_gpu() -> int:
    """The verifier jobs that share this process's GPU: 1, or the worker's shared-mode count."""
    return max(1, int(os.environ.get(JOBS_PER_GPU_ENV) or 1))


def locked_jobs() -> int:
    """The jobs whose working memory (a call's copies and outputs, a timing's buffers) is on this GPU
    at once: in one-GPU mode 1, since that memory is taken and given back under the GPU's lock
    (trusted_batch.py empties its cache before the lock goes; a locked job's child ends); the other
    jobs' resident data is already out of the free memory it is measured against. Else jobs_per_gpu."""
    return 1 if one_gpu_mode() else jobs_per_gpu()


def one_gpu_mode() -> bool:
    return os.environ.get(GPU_LOCK_ENV) == "1"


def its_room(device: str) -> float:
    """Bytes a job that has the GPU to itself may keep there: TIMING_FREE_SHARE of its free memory."""
    return TIMING_FREE_SHARE * free_bytes(device) if device.startswith("cuda") else float("inf")


JOBS_PER_GPU_ENV = "MTMC_JOBS_PER_GPU"  # set in a shared-mode worker's environment (verifier.py)
GPU_LOCK_ENV = "MTMC_GPU_LOCK"  # "1" in a one-GPU-mode worker's environment (verifier.py)


def _parked(inputs: list[Any]) -> list[Any]:
    """The inputs with their device tensors moved to the host."""
    if all(t.device.type == "cpu" for t in inputs if isinstance(t, torch.Tensor)):
        return inputs
    return [t.cpu() if isinstance(t, torch.Tensor) else t for t in inputs]


def precise_reference() -> None:
    # The reference is the truth the candidate is held to: no TF32 shortcuts inside it.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def default_backend_flags() -> dict[str, bool]:
    """PyTorch's default precision flags, the ones a user's eager and torch.compile code runs
    with: cuDNN convolutions on TF32, matmuls strict fp32. The baselines are timed with them (a
    fp32 conv kernel may use TF32 as eager's does: correctness.py); returns them as set."""
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cuda.matmul.allow_tf32 = False
    return {"cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
            "cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32}


def reference_model(task: Task, case: dict[str, Any], device: str) -> torch.nn.Module:
    return task.make_model(case["model_seed"], case["sizes"]).to(device)


def candidate_model(module: Any, case: dict[str, Any], device: str) -> torch.nn.Module:
    """ModelNew built as the reference's Model was for `case` (same seed, same init inputs, the
    task's mode: tasks/task.py)."""
    torch.manual_seed(case["model_seed"])
    return set_mode(module.ModelNew(*case["init_inputs"]), case.get("mode")).to(device)


def fresh_copy(inputs: list[Any], device: str | None = None) -> list[Any]:
    """The inputs with every tensor copied (to `device`, from a parked host copy): the candidate
    never touches the pristine ones."""
    return [t.to(device or t.device, copy=True) if isinstance(t, torch.Tensor) else t for t in inputs]


@contextlib.contextmanager
def sized(module: Any, sizes: dict[str, Any]) -> Iterator[None]:
    """The case's sizes override the candidate's module constants of the same names, as they
    override the task's for the reference (a CPU case may change `dtype`)."""
    saved = {key: getattr(module, key) for key in sizes if hasattr(module, key)}
    for key in saved:
        setattr(module, key, sizes[key])
    try:
        yield
    finally:
        for key, value in saved.items():
            setattr(module, key, value)


def poison(out_meta: list[list[Any]], device: str) -> None:
    """Fill freed blocks of the outputs' sizes with NaN, so that outputs never written show (S6).

    On a GPU the caching allocator hands the same block to the next allocation of that size, so
    this is exact. On the CPU, malloc is not a cache: several freed copies coalesce into one NaN
    region the next allocation is likely carved from; best effort (unwritten memory is garbage
    there anyway, and the reference never ran in this process for an output to land on)."""
    copies = 1 if device == "cuda" else 4  # GPU outputs can be GBs: one block is enough there
    blocks = []
    for shape, dtype_name in out_meta:
        dtype = getattr(torch, dtype_name.removeprefix("torch."))
        for _ in range(copies):
            block = torch.empty(shape, dtype=dtype, device=device)
            block.fill_(float("nan") if block.is_floating_point() else 0x5A)
            blocks.append(block)
    del blocks


def run_forward(model: torch.nn.Module, inputs: list[Any]) -> Any:
    with torch.no_grad():
        return model(*inputs)


def output_kind(raw: Any) -> str:
    return "tuple" if isinstance(raw, tuple) else "list" if isinstance(raw, list) else "single"


def as_list(raw: Any) -> list[Any]:
    return list(raw) if isinstance(raw, tuple | list) else [raw]


def timing_sets(data: dict[str, Any], device: str) -> list[list[Any]]:
    """The timing input sets: on `device` if together they fit its share (RESIDENT_SHARE), or if
    there is one and it fits beside what the timing needs (one_timing_set_fits); else left in host
    memory, whence the timing loop copies one into its working buffers before each call (timing.py,
    outside the timed region). Why: each set is a whole case's inputs; level-1
    76_conv_standard_1D_dilated_strided has 8.6 GB a set, and three on an H100 beside the working
    buffers, the untimed outputs and the call's own ran its candidate job out of memory. Either way
    the sets are the pristine copies the buffers are restored from: callers hand the candidate
    copies (fresh_copy), never these."""
    indices = data["timing"]["sets"]
    sets = [data["cases"][i]["inputs"] for i in indices]
    set_bytes = [sum(t.nbytes for t in inputs if isinstance(t, torch.Tensor)) for inputs in sets]
    out_bytes = max(fingerprint_bytes(data["cases"][i]["out_meta"]) for i in indices)
    if sum(set_bytes) <= resident_budget(device) or one_timing_set_fits(set_bytes, out_bytes,
                                                                         free_bytes(device)):
        return [to_device(inputs, device) for inputs in sets]
    return [_parked(inputs) for inputs in sets]


# Half the device's free memory, shared between the jobs on it: what a lone timing set that does not fit
# the resident share may take with the timing's working copy of it and 3x its outputs (the untimed ones,
# the last timed call's, the current call's; the candidate's workspace goes in the other half).
# Estimate (untimed; issue 25): KernelBench 45_Average_Pooling_2D's large-case plan times one 16 GiB set
# with 0.13 GiB of outputs. Parked, every call of the timing stage copied it from pageable host memory,
# ~2.4 s a copy on an H100 host: the profile, the untimed call, the buffers, two warm-up calls and ten
# timed ones, ~14 copies, ~34 s of the candidate job's 120 s. Kept here (2 x 16 + 3 x 0.13 GiB against
# half of ~78 GiB free), it crosses once (~2.4 s) and each restore is a device-to-device copy (32 GiB of
# traffic, ~12 ms at H100 HBM rates): the stage drops to ~5 s, its 2 s timing budget included.
TIMING_FREE_SHARE = 0.5


def one_timing_set_fits(set_bytes: list[int], out_bytes: int, free: float) -> bool:
    """Whether a lone timing set stays on the device: it and the timing's working copy of it, with
    3x its outputs, within TIMING_FREE_SHARE of the `free` bytes this job may take."""
    if len(set_bytes) != 1:
        return False  # several sets stay parked: 76_'s three (26 GB) ran a job out of memory
    return 2 * set_bytes[0] + 3 * out_bytes <= TIMING_FREE_SHARE * free / locked_jobs()


def free_bytes(device: str) -> int:
    """Bytes this process can still allocate on `device`: the driver's free memory and what PyTorch's
    caching allocator holds unused (it returns those to the driver and retries before an allocation
    fails); after the checked cases that cache may hold a 16 GiB input's copy. 0 off a GPU."""
    dev = torch.device(device)
    if dev.type != "cuda":
        return 0
    index = dev.index if dev.index is not None else torch.cuda.current_device()
    free, _ = torch.cuda.mem_get_info(index)
    return free + torch.cuda.memory_reserved(index) - torch.cuda.memory_allocated(index)


def to_device(values: list[Any], device: str) -> list[Any]:
    """The values on `device`: tensors elsewhere (parked inputs) copied over, the others as they are."""
    return [v.to(device) if isinstance(v, torch.Tensor) else v for v in values]


def eager_errors(model: torch.nn.Module, inputs: list[Any], outputs: list[torch.Tensor]) -> list[float]:
    """Eager PyTorch's own error on this case at its default precision (TF32 cuDNN convolutions), per
    output: what a candidate's tolerance may widen to (correctness.py)."""
    default_backend_flags()
    try:
        eager = as_list(run_forward(model, inputs))
    finally:
        precise_reference()
    if len(eager) != len(outputs):
        return [0.0] * len(outputs)
    return [eager_error(ref, got) for ref, got in zip(outputs, eager, strict=True)]


def reference_errors(model: torch.nn.Module, inputs: list[Any], outputs: list[torch.Tensor],
                     failures: list[str] | None = None) -> list[float]:
    """The fp32 reference's own rounding error on this case, per output: the same forward in float64
    (a copy of the model and of the floating inputs) as the truth, measured by reference_error (0
    for outputs that are not float32). What a candidate's tolerance may widen to (correctness.py).
    A forward that fails in float64 (dtype-specific code, no room for the copy) gets 0 everywhere:
    the tolerance of before, never an error; such a failure's exception is named in `failures` (a
    reference job beside an overlapped baseline is then run again alone: overlap.py)."""
    if not any(o.dtype == torch.float32 for o in outputs):
        return [0.0] * len(outputs)
    try:
        truth = _forward_in_float64(model, inputs)
    except Exception as err:  # any failure means no floor, nothing else
        truth = None
        if failures is not None:
            failures.append(type(err).__name__)
    if truth is None or len(truth) != len(outputs) or not all(isinstance(t, torch.Tensor) for t in truth):
        if torch.cuda.is_available():
            torch.cuda.empty_cache()  # after an out-of-memory, the rest of the job needs the room
        return [0.0] * len(outputs)
    errors = [reference_error(ref, t) for ref, t in zip(outputs, truth, strict=True)]
    del truth
    return errors


def _forward_in_float64(model: torch.nn.Module, inputs: list[Any]) -> list[Any]:
    """The copy and the float64 inputs die with this frame (or with the exception's traceback)."""
    twin = copy.deepcopy(model).double()  # the reference's own model is left as it was
    doubled = [t.double() if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in inputs]
    return as_list(run_forward(twin, doubled))


class PhaseClock:
    """Wall seconds per phase of a verifier job (child.py's reference and candidate, trusted_jobs.py's
    baseline), reported with its result: where verify time goes."""

    def __init__(self) -> None:
        self.phases: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, name: str) -> None:
        """The time since the last lap, added to `name` (a phase met once per case sums them)."""
        now = time.perf_counter()
        self.phases[name] = round(self.phases.get(name, 0.0) + now - self._last, 4)
        self._last = now
