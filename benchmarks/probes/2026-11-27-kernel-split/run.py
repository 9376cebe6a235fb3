"""Where a task's GPU time goes: eager, torch.compile and our programs, kernel by kernel.

    python benchmarks/probes/2026-11-27-kernel-split/run.py --tasks-dir .kb/l2 \
        --tasks 34_ 67_ 7_ 73_ --out $OUT/split.json --time-limit 240 [--no-compile] [--programs <bench>]

For each task (a file of --tasks-dir whose name starts with one of --tasks) it builds the reference
model and inputs on the GPU, then for each runner -- `eager` (PyTorch's default flags: cuDNN TF32
on), `ours` (the template coder's port with every epilogue fused), `program` (with --programs,
<folder>/<task>/kernel.py: a `mtmc bench` folder's program) and `compile` (torch.compile with the
defaults; --no-compile drops it) -- it makes --warmup-calls calls, profiles --calls calls with
torch.profiler (CPU and CUDA activities) and adds up the GPU time of each kernel name (ms and
launches per call), then times a call with triton.testing.do_bench (median). Each kernel name falls
in a family (FAMILY_RULES: conv, gemm, reduce/norm, elementwise, copy, other), and each runner
reports its wall and kernel (GPU) ms per call, its ms per family and its top kernels; each task also reports
ours minus compile (and minus eager) per family: the answer to "is it the conv kernel or the rest?".

Every output is checked against eager with TF32 off (max |error|). A failing task or runner is
recorded and skipped; past --time-limit no task and no runner starts (compile, the slow one, runs
last, so a task begun near the limit still gets its eager and ours). --variants picks runners
("eager;ours").

--cpu-dry-run checks the logic on the CPU (TRITON_INTERPRET=1, set here): DRY_SIZES or --sizes, CPU
activities only (the "kernels" are aten ops; the interpreter's kernels are not ops), no compile.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

if "--cpu-dry-run" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported (the harness imports it)

import torch  # noqa: E402
from torch.autograd import DeviceType  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository: benchmarks/ is not installed

from benchmarks.gpu_bench import load_program  # noqa: E402
from benchmarks.probes import harness  # noqa: E402
from coders.template import TemplateCoder  # noqa: E402
from mtmc.program import Program  # noqa: E402
from mtmc.tasks import Task  # noqa: E402
from mtmc.tasks.task import task_from_file  # noqa: E402
from mtmc.verify.case_io import sized  # noqa: E402

# The runners in the order they run: compile, the slow one to start, last (see the time limit).
RUNNERS = ["eager", "ours", "program", "compile"]
SHOWN = ["eager", "compile", "ours", "program"]  # the order they print in

# A kernel's family: the first rule with a substring of its lower-cased name. The order matters:
# - inductor's kernels first: it names them after the ops they fuse ("triton_poi_fused_convolution_
#   gelu_0" is the bias + GELU after cuDNN's conv); its templates (triton_tem_) fall through;
# - copies before conv: cuDNN's layout transforms (nchwToNhwcKernel<..., cudnnKernelDataType_t>)
#   name cudnn, and our conv's channels-last TF32 copy (_tf32_pack_kernel) is a copy too, so "conv"
#   is the convolution kernels proper, and the copies around them show apart;
# - cuDNN's batch norm (cudnn::bn_fw_*) before the conv rule's "cudnn";
# - conv before gemm (cuDNN's sm90_xmma_fprop_implicit_gemm_* are convs; a cuDNN 1x1 conv may run a
#   plain xmma gemm, which lands in gemm) and before reduce/norm (our fused kernels are named after
#   the conv and its epilogue: _conv_truediv_max_pool_kernel);
# - aten's elementwise kernels before the reduce words ("clamp_min" inside an elementwise kernel).
# "conv" alone would match "convert", so the conv words are longer.
FAMILY_RULES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("elementwise", ("triton_poi_",)),
    ("reduce/norm", ("triton_red_", "triton_per_")),
    ("copy", ("memcpy", "memset", "copy", "nchwtonhwc", "nhwctonchw", "_pack", "fill", "zero_", "clone",
              "contiguous")),
    ("reduce/norm", ("bn_fw", "bn_bw")),
    ("conv", ("conv1d", "conv2d", "conv3d", "conv_", "_conv", "convol", "fprop", "dgrad", "wgrad",
              "implicit", "winograd", "cudnn")),
    ("gemm", ("gemm", "gemv", "matmul", "cublas", "cutlass", "xmma", "aten::mm", "aten::addmm",
              "aten::bmm", "aten::linear")),
    ("elementwise", ("elementwise",)),
    ("reduce/norm", ("norm", "bn_", "reduce", "softmax", "welford", "moments", "pool", "mean", "sum",
                     "max", "min", "logsumexp")),
    ("elementwise", ("relu", "gelu", "sigmoid", "tanh", "mish", "swish", "softplus", "clamp", "add", "sub",
                     "mul", "div", "exp", "where", "pointwise")),
)
FAMILIES = ("conv", "gemm", "reduce/norm", "elementwise", "copy", "other")
TOP = 5  # kernels per runner in the report
NAME_CHARS = 200  # of a kernel's name kept in the JSON (aten's template names run to thousands)

# --cpu-dry-run's sizes where the task has no cpu_sizes (KernelBench's files): a small batch, depth
# and height, 3 input channels (level 2 reads in_channels only in get_inputs and get_init_inputs).
# The width and out_channels stay: LayerNorm(out_channels) over the last dim (3_, 34_) needs both,
# and module constants such as bias_shape = (out_channels, 1, 1, 1) are computed from the latter.
DRY_SIZES = {"batch_size": 2, "in_channels": 3, "depth": 4, "D": 4, "height": 6, "H": 6}
DRY_CALLS = {"calls": 2, "warmup_calls": 1}  # the interpreter takes seconds a call: the fewest that test


def family_of(name: str) -> str:
    lower = name.lower()
    for family, words in FAMILY_RULES:
        if any(word in lower for word in words):
            return family
    return "other"


def dry_sizes(task: Task) -> dict[str, Any]:
    """The task's own cpu_sizes, else DRY_SIZES for the constants it has."""
    own = task.sizes("cpu")[0]
    if own:
        return own
    module = task.module({})
    return {k: v for k, v in DRY_SIZES.items() if hasattr(module, k)}

# --------------------------------------------------------------------------------------------------
# the profile, kernel by kernel
# --------------------------------------------------------------------------------------------------

def self_device_us(evt) -> float:
    """A row's own device time in µs: self_device_time_total (torch 2.4 on: both machines' torch),
    self_cuda_time_total before (deprecated since, so only asked for when the other is missing)."""
    value = getattr(evt, "self_device_time_total", None)
    return float(value if value is not None else getattr(evt, "self_cuda_time_total", 0))


def kernel_times(averages, cpu: bool) -> list[tuple[str, float, int]]:
    """(name, µs, launches) of each kernel in key_averages(): on a GPU the rows on the device (kernels,
    copies, memsets), not record_function ranges (user annotations, which torch.compile adds and
    which would count their kernels twice); on the CPU the ops, by self time."""
    rows = []
    for evt in averages:
        if getattr(evt, "is_user_annotation", False):
            continue
        if (evt.device_type == DeviceType.CPU) != cpu:
            continue
        us = float(evt.self_cpu_time_total) if cpu else self_device_us(evt)
        if us > 0:
            rows.append((evt.key, us, int(evt.count)))
    return rows


def breakdown(times: list[tuple[str, float, int]], calls: int) -> dict[str, Any]:
    """Per call: the kernels' ms (GPU time; the ops' self time on the CPU), the launches, the ms per
    family and every kernel (slowest first)."""
    kernels = sorted(({"name": name[:NAME_CHARS], "family": family_of(name), "ms": us / 1e3 / calls,
                       "per_call": count / calls} for name, us, count in times), key=lambda k: -k["ms"])
    families = {f: sum(k["ms"] for k in kernels if k["family"] == f) for f in FAMILIES}
    return {"kernel_ms": sum(k["ms"] for k in kernels), "launches": sum(k["per_call"] for k in kernels),
            "families": {f: ms for f, ms in families.items() if ms > 0}, "kernels": kernels}


def profiled(call, calls: int, cpu: bool):
    """key_averages() of `calls` calls."""
    activities = [ProfilerActivity.CPU] + ([] if cpu else [ProfilerActivity.CUDA])
    with profile(activities=activities) as prof:
        for _ in range(calls):
            call()
        if not cpu:
            torch.cuda.synchronize()
    return prof.key_averages()


def split_runner(model, inputs: list, expected: Any, args, bench) -> dict[str, Any]:
    """A model's error (after the warm-up), its kernel breakdown per call and its wall ms per call."""
    with torch.no_grad():
        call = lambda: model(*inputs)  # noqa: E731
        for _ in range(max(1, args.warmup_calls)):
            out = call()
        result: dict[str, Any] = {"max_err": harness.max_error(out, expected)}
        result.update(breakdown(kernel_times(profiled(call, args.calls, args.cpu_dry_run), args.cpu_dry_run),
                                args.calls))
        result["ms"] = bench(call)
    return result

# --------------------------------------------------------------------------------------------------
# the runners
# --------------------------------------------------------------------------------------------------

def program_file(args, path: Path) -> Path | None:
    """--programs' program for the task (a `mtmc bench` folder: <task>/kernel.py), if any."""
    if args.programs is None:
        return None
    found = args.programs / path.stem / "kernel.py"
    return found if found.exists() else None


def candidate(module, task: Task, sizes: dict, reference, device: str):
    """A program's ModelNew as the verifier builds it (seeded as the reference was, in the task's
    mode), with the reference's weights where it names them alike (ours does; a bench program's own
    names keep the seeded weights, which the verifier relies on too)."""
    torch.manual_seed(0)
    model = task.in_mode(module.ModelNew(*task.init_inputs(sizes))).to(device)
    if model.state_dict().keys() == reference.state_dict().keys():
        model.load_state_dict(reference.state_dict())
    return model


def run_one(name: str, task: Task, path: Path, coder: TemplateCoder, reference, inputs, expected,
            sizes: dict, args, bench) -> dict[str, Any]:
    """One runner's split; a failure (build, compile, launch) is a result to report, not a crash."""
    device = "cpu" if args.cpu_dry_run else "cuda"
    try:
        if name == "eager":
            return split_runner(reference, inputs, expected, args, bench)
        if name == "compile":
            if args.cpu_dry_run or args.no_compile:
                return {"skipped": "no torch.compile here"}
            try:
                return split_runner(torch.compile(reference), inputs, expected, args, bench)
            finally:
                torch._dynamo.reset()  # the next task's model is compiled from scratch
        if name == "ours":
            module = harness.load(task, harness.fused_ir(coder, task), path, "fused")[1]
        else:
            source = program_file(args, path)
            if source is None:
                return {"skipped": "no --programs kernel.py for this task"}
            module = load_program(Program(source.read_text()), f"{path.stem}_program".replace("-", "_"))
        with sized(module, sizes):  # a program may read the task's constants, as the verifier sets them
            return split_runner(candidate(module, task, sizes, reference, device), inputs, expected, args,
                                bench)
    except Exception as err:
        return harness.failure(err)


def gaps(results: dict[str, dict], base: str) -> dict[str, float]:
    """ours minus `base`, ms per call: wall, kernels and per family (where both ran)."""
    ours, other = results.get("ours", {}), results.get(base, {})
    if "ms" not in ours or "ms" not in other:
        return {}
    out = {"wall": ours["ms"] - other["ms"], "kernels": ours["kernel_ms"] - other["kernel_ms"]}
    for family in FAMILIES:
        delta = ours["families"].get(family, 0.0) - other["families"].get(family, 0.0)
        if delta:
            out[family] = delta
    return out


def probe_task(coder: TemplateCoder, path: Path, runners: list[tuple[str, dict]], args, clock) -> dict:
    task = task_from_file(path)
    device = "cpu" if args.cpu_dry_run else "cuda"
    sizes = harness.sizes_of(task, args, dry=dry_sizes)
    bench = harness.timer(args.cpu_dry_run)
    row: dict[str, Any] = {"task": path.stem, "sizes": sizes}
    reference = task.make_model(seed=0, sizes=sizes).to(device)
    with torch.device(device):  # the task's get_inputs makes its tensors on the device
        inputs = task.make_inputs(seed=1, sizes=sizes)
    with torch.no_grad():
        harness.set_tf32(False)
        expected = reference(*inputs)  # the truth: eager with TF32 off
    harness.set_tf32(True)  # every runner runs with PyTorch's defaults
    try:
        harness.probe_variants(row, runners, args, clock, lambda name, _: run_one(
            name, task, path, coder, reference, inputs, expected, sizes, args, bench))
    finally:
        harness.set_tf32(False)
    row["runners"] = row.pop("variants")
    row["ours_minus_compile"] = gaps(row["runners"], "compile")
    row["ours_minus_eager"] = gaps(row["runners"], "eager")
    return row

# --------------------------------------------------------------------------------------------------
# the report
# --------------------------------------------------------------------------------------------------

GAP_KEYS = ("wall", "kernels") + FAMILIES


def family_cells(values: dict[str, float], keys: tuple[str, ...] = FAMILIES, signed: bool = False) -> str:
    return "  ".join(f"{k} {values[k]:{'+' if signed else ''}.3f}" for k in keys if k in values)


def print_row(row: dict) -> None:
    if "runners" not in row:
        print(f"{row['task']}: {row.get('skipped') or 'ERROR ' + row.get('error', '')}", flush=True)
        return
    print(f"{row['task'][:70]}  sizes {row['sizes'] or 'full'}  ({row['elapsed_s']} s)", flush=True)
    for name in (n for n in SHOWN if n in row["runners"]):
        r = row["runners"][name]
        if "ms" not in r:
            print(f"  {name:8s} {r.get('skipped') or r.get('error', '')[:150]}", flush=True)
            continue
        print(f"  {name:8s} wall {r['ms']:8.3f} ms  kernels {r['kernel_ms']:8.3f} ms  "
              f"{r['launches']:5.1f} launches  err {r['max_err']:.1e} | {family_cells(r['families'])}",
              flush=True)
        for k in r["kernels"][:TOP]:
            print(f"  {'':8s}   {k['ms']:8.3f} ms x{k['per_call']:<4.1f} {k['family']:11s} {k['name'][:90]}",
                  flush=True)
    for base in ("compile", "eager"):
        if row[f"ours_minus_{base}"]:
            print(f"  ours - {base} (ms): {family_cells(row[f'ours_minus_{base}'], GAP_KEYS, signed=True)}",
                  flush=True)


def summary(rows: list[dict]) -> dict[str, dict]:
    """Per task: ours minus compile (else minus eager), ms per call: wall, GPU and by family."""
    out = {}
    for row in rows:
        base = "compile" if row.get("ours_minus_compile") else "eager"
        if row.get(f"ours_minus_{base}"):
            out[row["task"]] = {"base": base, **row[f"ours_minus_{base}"]}
    return out


def main(argv: list[str] | None = None) -> None:
    parser = harness.parser(__doc__, time_limit=240.0,
                            time_help="seconds; no task or runner starts after them")
    parser.add_argument("--programs", type=Path, default=None,
                        help="a folder of <task>/kernel.py (a `mtmc bench` folder): the `program` runner")
    parser.add_argument("--calls", type=int, default=None, help="profiled calls per runner (10; dry run 2)")
    parser.add_argument("--warmup-calls", type=int, default=None,
                        help="calls before the profile, at least 1 (3; dry run 1)")
    harness.add_dry_run(parser, "small sizes on the CPU interpreter, CPU ops as the kernels")
    args = parser.parse_args(argv)
    unknown = [n for n, _ in harness.variants_of(args, RUNNERS) if n not in RUNNERS]
    if unknown:
        parser.error(f"--variants names runners, of {RUNNERS}: not {unknown}")
    for key, gpu_default in (("calls", 10), ("warmup_calls", 3)):
        if getattr(args, key) is None:
            setattr(args, key, DRY_CALLS[key] if args.cpu_dry_run else gpu_default)
    if args.cpu_dry_run:
        from mtmc.verify.interpreter import autotune_on_the_cpu

        autotune_on_the_cpu()  # a --programs program may autotune; the interpreter has no benchmarker
    run_meta = harness.meta(args, calls=args.calls, warmup_calls=args.warmup_calls, families=FAMILY_RULES,
                            runners="eager: default flags (cudnn TF32 on); compile: torch.compile defaults; "
                                    "max_err against eager with TF32 off")
    rows = harness.probe_tasks(args, RUNNERS, probe_task, print_row, summary, run_meta)
    for task, gap in summary(rows).items():
        print(f"{task[:50]:50s} ours - {gap['base']:7s} {family_cells(gap, GAP_KEYS, signed=True)}")


if __name__ == "__main__":
    main()
