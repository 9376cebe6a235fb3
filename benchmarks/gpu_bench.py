"""Check and time template-coder programs on a GPU (a developer tool, not part of the pipeline).

    python -m benchmarks.gpu_bench [--variants "port;fused;tuned"] [--out DIR] [TASK ...]

Run it from the repository root: benchmarks/ is not an installed package.

For each task (all built-ins by default) and variant it builds the program, checks it against the
reference at the task's own (GPU) size by relative L2 error, and times reference and candidate
with `triton.testing.do_bench` (median, L2 flushed between runs). Variants:

    port    the first program
    fused   after every legal `fuse` step
    tuned   fused, then `precision tf32x3` (fp32 dots), `group_m 8` and `autotune` where legal
    fused+<step>+...   fused, then the given steps where legal (e.g. "fused+split_k 4")
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import traceback
from pathlib import Path

import torch
import triton

from coders.template import TemplateCoder
from mtmc.program import Program
from mtmc.protocols import CoderError
from mtmc.strategies import PORT, Strategy
from mtmc.tasks import Task, builtin_names, load_task

# relative L2 error allowed per output dtype (fp32 matmuls accumulate in a different order)
LIMITS = {torch.float32: 1e-4, torch.float16: 2e-3, torch.bfloat16: 1e-2}


def build(coder: TemplateCoder, task: Task, variant: str) -> Program:
    """A variant is `port`, `fused`, `tuned`, or `fused+<step>+<step>...` (illegal steps skipped)."""
    program = coder.apply(task, None, PORT)
    if variant == "port":
        return program
    while fusions := [s for s in coder.legal_strategies(task, program) if s.kind == "fuse"]:
        program = coder.apply(task, program, fusions[0])
    extra = variant.split("+")[1:]
    if variant == "tuned":
        extra = ["precision tf32x3", "group_m 8", "autotune"]
    for text in extra:
        if Strategy.parse(text) in coder.legal_strategies(task, program):
            program = coder.apply(task, program, Strategy.parse(text))
    return program


def check_variant(variant: str) -> None:
    """Refuse a variant that does not start from `fused` (a leading step would be dropped)."""
    head, *extra = variant.split("+")
    if head not in ("port", "fused", "tuned") or (head != "fused" and extra):
        raise ValueError(f"variant {variant!r}: expected port, fused, tuned or fused+<step>+<step>...")
    for text in extra:
        Strategy.parse(text)  # a typo fails here, before any GPU time is spent


def load_program(program: Program, tag: str):
    path = Path(tempfile.mkdtemp()) / f"{tag}.py"
    path.write_text(program.source)
    spec = importlib.util.spec_from_file_location(tag, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rel_error(got, expected) -> float:
    got = got if isinstance(got, tuple | list) else [got]
    expected = expected if isinstance(expected, tuple | list) else [expected]
    worst = 0.0
    for g, e in zip(got, expected, strict=True):
        if g.shape != e.shape or g.dtype != e.dtype:
            return float("inf")
        g64, e64 = g.double(), e.double()
        if not torch.isfinite(g64).all() and not torch.equal(torch.isfinite(g64), torch.isfinite(e64)):
            return float("inf")
        mask = torch.isfinite(e64)
        num = torch.linalg.vector_norm((g64 - e64)[mask])
        den = torch.linalg.vector_norm(e64[mask]).clamp_min(1e-30)
        worst = max(worst, float(num / den))
    return worst


def limit_of(outputs) -> float:
    outputs = outputs if isinstance(outputs, tuple | list) else [outputs]
    return max(LIMITS.get(o.dtype, 1e-4) for o in outputs)


def bench_task(coder: TemplateCoder, name: str, variants: list[str]) -> dict:
    task = load_task(name)
    row: dict = {"task": name}
    reference = task.make_model(seed=0).cuda()
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in task.make_inputs(seed=1)]
    with torch.no_grad():
        expected = reference(*inputs)
        row["eager_ms"] = triton.testing.do_bench(lambda: reference(*inputs), return_mode="median")
    for variant in variants:
        try:
            program = build(coder, task, variant)
            module = load_program(program, f"{name}_{variant}")
            torch.manual_seed(0)
            candidate = module.ModelNew(*task.init_inputs()).cuda()
            candidate.load_state_dict(reference.state_dict())
            with torch.no_grad():
                got = candidate(*inputs)
                err = rel_error(got, expected)
                ms = triton.testing.do_bench(lambda c=candidate: c(*inputs), return_mode="median")
            ok = err <= limit_of(expected)
            row[variant] = {"ms": ms, "speedup": row["eager_ms"] / ms, "rel_err": err, "ok": ok,
                            "kernels": len(program.metadata["template_ir"]["steps"]),
                            "steps": program.metadata["template_steps"],
                            "best": {k: str(getattr(v, "best_config", "")) for k, v in vars(module).items()
                                     if hasattr(v, "best_config")}}
        except CoderError as err:
            row[variant] = {"error": f"CoderError: {err}"}
        except Exception as err:  # a compile or launch failure is a result to report, not a crash
            row[variant] = {"error": f"{type(err).__name__}: {str(err)[:300]}",
                            "trace": traceback.format_exc()[-2000:]}
        torch.cuda.synchronize()
    return row


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="*")
    parser.add_argument("--variants", default="port;fused;tuned", help="separated by ';'")
    parser.add_argument("--out", default=None)
    args = parser.parse_args(argv)
    variants = args.variants.split(";")
    for variant in variants:
        check_variant(variant)
    coder = TemplateCoder()
    rows = []
    for name in args.tasks or builtin_names():
        try:
            row = bench_task(coder, name, variants)
        except Exception as err:
            row = {"task": name, "error": f"{type(err).__name__}: {err}"}
        rows.append(row)
        cells = []
        for v in variants:
            r = row.get(v, {})
            if "ms" in r:
                flag = "" if r["ok"] else f" WRONG({r['rel_err']:.1e})"
                best = " ".join(b.replace("num_ctas: 1, ", "").replace("maxnreg: None", "")[:90]
                                for b in r.get("best", {}).values())
                best = f" [{best}]" if best else ""
                cells.append(f"{v}={r['ms']:.3f}ms x{r['speedup']:.2f}{flag}{best}")
            else:
                cells.append(f"{v}=ERR {r.get('error', row.get('error', ''))[:120]}")
        eager = row.get("eager_ms", float("nan"))
        print(f"{name:30s} eager={eager:.3f}ms " + "  ".join(cells), flush=True)
        if args.out:
            Path(args.out).mkdir(parents=True, exist_ok=True)
            (Path(args.out) / "template_bench.json").write_text(json.dumps(rows, indent=1))
        torch.cuda.empty_cache()
    for v in variants:
        speedups = [r[v]["speedup"] for r in rows if v in r and r[v].get("ok")]
        if speedups:
            geo = torch.tensor(speedups).log().mean().exp().item()
            print(f"{v}: {len(speedups)}/{len(rows)} correct, geomean speedup over eager {geo:.2f}x",
                  file=sys.stdout)


if __name__ == "__main__":
    main()
