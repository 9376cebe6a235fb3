"""Time the probe variants against eager and print % of the measured copy bandwidth.

    python benchmarks/probes/2026-11-24-memory-bound/run.py OUT_DIR VARIANTS_DIR

VARIANTS_DIR/<task>/*.py each define ModelNew (make_variants.py writes them). The copy bandwidth
is that of a 2 GiB fp32 copy, timed first; a task's floor is its inputs and outputs moved once.
"""

import importlib.util
import json
import sys
from pathlib import Path

import torch
import triton

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))  # the repository: benchmarks/ is not installed

from benchmarks.gpu_bench import limit_of, rel_error  # noqa: E402
from mtmc.tasks import load_task  # noqa: E402


def load(path: Path):
    spec = importlib.util.spec_from_file_location(f"{path.parent.name}_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def nbytes(values) -> int:
    values = values if isinstance(values, list | tuple) else [values]
    return sum(v.numel() * v.element_size() for v in values if isinstance(v, torch.Tensor))


def copy_bandwidth() -> float:
    """TB/s of a device-to-device copy of 2 GiB."""
    x = torch.empty(2**29, device="cuda")
    y = torch.empty_like(x)
    ms = triton.testing.do_bench(lambda: y.copy_(x), return_mode="median")
    return 2 * x.numel() * 4 / ms / 1e9


def registers(module) -> dict:
    """{kernel: [registers per thread, spilled bytes]} of the module's compiled Triton kernels."""
    found = {}
    for name, fn in vars(module).items():
        while hasattr(fn, "fn") and not hasattr(fn, "device_caches"):  # autotune / heuristics wrappers
            fn = fn.fn
        for entry in getattr(fn, "device_caches", {}).values():
            cache = entry[0] if isinstance(entry, tuple) else entry
            for kernel in cache.values():
                found[name] = [getattr(kernel, "n_regs", None), getattr(kernel, "n_spills", None)]
    return found


def probe_task(folder: Path, bandwidth: float) -> dict:
    task = load_task(folder.name)
    reference = task.make_model(seed=0).cuda()
    inputs = [v.cuda() if isinstance(v, torch.Tensor) else v for v in task.make_inputs(seed=1)]
    with torch.no_grad():
        expected = reference(*inputs)
        eager = triton.testing.do_bench(lambda: reference(*inputs), return_mode="median")
    floor = (nbytes(inputs) + nbytes(expected)) / bandwidth / 1e9
    row = {"eager_ms": eager, "bytes": nbytes(inputs) + nbytes(expected), "floor_ms": floor}
    print(f"== {folder.name} eager {eager:.3f} ms floor {floor:.3f} ms (85% line {floor / 0.85:.3f})",
          flush=True)
    for path in sorted(folder.glob("*.py")):
        try:
            torch.manual_seed(0)
            module = load(path)
            candidate = module.ModelNew(*task.init_inputs()).cuda()
            candidate.load_state_dict(reference.state_dict())
            with torch.no_grad():
                err = max(rel_error(candidate(*inputs), expected) for _ in range(2))  # twice: no stale state
                ms = triton.testing.do_bench(lambda c=candidate: c(*inputs), return_mode="median")
            ok = err <= limit_of(expected)
            regs = registers(module)
            row[path.stem] = {"ms": ms, "pct": 100 * floor / ms, "err": err, "ok": ok, "registers": regs}
            print(f"  {path.stem:28s} {ms:7.3f} ms {100 * floor / ms:5.1f}%  err {err:.1e} "
                  f"{'ok' if ok else 'WRONG'} {regs}", flush=True)
        except Exception as err:  # a variant that fails to compile or launch is a result
            row[path.stem] = {"error": f"{type(err).__name__}: {str(err)[:400]}"}
            print(f"  {path.stem:28s} ERROR {type(err).__name__}: {str(err)[:300]}", flush=True)
        torch.cuda.synchronize()
    return row


def main() -> None:
    out, variants = Path(sys.argv[1]), Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    bandwidth = copy_bandwidth()
    print(f"copy bandwidth {bandwidth:.3f} TB/s", flush=True)
    rows = {"copy_tbs": bandwidth}
    for folder in sorted(p for p in variants.iterdir() if p.is_dir()):
        rows[folder.name] = probe_task(folder, bandwidth)
        (out / "probe.json").write_text(json.dumps(rows, indent=1))
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
