"""Probe GEMM kernel forms against cuBLAS on a GPU (a developer tool: it decides what the template
coder's matmul emitter should write; BENCHMARKS.md records what it found).

    python benchmarks/probe_gemm.py [--out DIR] [--quick]

Forms, each autotuned over a few Hopper configurations, on the built-in suite's GEMM shapes:
    ptr     the template's form: pointer loads, B through its strides (a linear's W is read K-major)
    ptr_nk  for a linear: W loaded as [BLOCK_N, BLOCK_K] rows and transposed in the dot
    tma     host-side TMA tensor descriptors (16-byte aligned strides only), one tile per program
    tma_p   TMA, persistent: one program per SM walks the tiles
and for fp32 operands the dot's input precision: ieee (FMA), tf32x3 (three TF32 tensor-core
products, fp32-level error), tf32; each with its relative L2 error against an fp64 product, next to
cuBLAS's own fp32 error.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl

try:  # host-side TMA descriptors (Triton >= 3.4)
    from triton.tools.tensor_descriptor import TensorDescriptor
except ImportError:  # pragma: no cover - older Triton
    TensorDescriptor = None

HALF_CONFIGS = [(128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (128, 128, 64, 8, 4), (128, 128, 64, 4, 4),
                (128, 256, 64, 8, 4), (128, 128, 128, 8, 3)]
FP32_CONFIGS = [(128, 128, 32, 8, 3), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4), (128, 128, 16, 8, 4),
                (128, 256, 32, 8, 3), (64, 64, 32, 4, 4)]


def configs(table, hook=None):
    return [triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k, "GROUP_M": 8}, num_warps=w,
                          num_stages=s, pre_hook=hook) for m, n, k, w, s in table]


@triton.jit
def _tile(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    in_group = GROUP_M * num_pid_n
    first_m = (pid // in_group) * GROUP_M
    size_m = min(num_pid_m - first_m, GROUP_M)
    return first_m + (pid % in_group) % size_m, (pid % in_group) // size_m


@triton.jit
def _store(c_ptr, acc, pid_m, pid_n, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M))[:, None]
    rn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N))[None, :]
    tl.store(c_ptr + rm * N + rn, acc.to(c_ptr.dtype.element_ty), mask=(rm < M) & (rn < N))


def gemm_ptr_kernel(table):
    @triton.autotune(configs=configs(table), key=["M", "N", "K", "PREC"])
    @triton.jit
    def kernel(a_ptr, b_ptr, c_ptr, M, N, K, s_am, s_ak, s_bk, s_bn, BLOCK_M: tl.constexpr,
               BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, PREC: tl.constexpr):
        pid_m, pid_n = _tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
        offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
        offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
        offs_k = tl.arange(0, BLOCK_K)
        a_ptrs = a_ptr + offs_m[:, None] * s_am + offs_k[None, :] * s_ak
        b_ptrs = b_ptr + offs_k[:, None] * s_bk + offs_n[None, :] * s_bn
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, K, BLOCK_K):
            a = tl.load(a_ptrs, mask=(k + offs_k)[None, :] < K, other=0.0)
            b = tl.load(b_ptrs, mask=(k + offs_k)[:, None] < K, other=0.0)
            acc = tl.dot(a, b, acc, input_precision=PREC)
            a_ptrs += BLOCK_K * s_ak
            b_ptrs += BLOCK_K * s_bk
        _store(c_ptr, acc, pid_m, pid_n, M, N, BLOCK_M, BLOCK_N)
    return kernel


def gemm_ptr_nk_kernel(table):
    @triton.autotune(configs=configs(table), key=["M", "N", "K", "PREC"])
    @triton.jit
    def kernel(a_ptr, w_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
               BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, PREC: tl.constexpr):
        pid_m, pid_n = _tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
        offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
        offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
        offs_k = tl.arange(0, BLOCK_K)
        a_ptrs = a_ptr + offs_m[:, None] * K + offs_k[None, :]
        w_ptrs = w_ptr + offs_n[:, None] * K + offs_k[None, :]
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, K, BLOCK_K):
            a = tl.load(a_ptrs, mask=(k + offs_k)[None, :] < K, other=0.0)
            w = tl.load(w_ptrs, mask=(k + offs_k)[None, :] < K, other=0.0)
            acc = tl.dot(a, tl.trans(w), acc, input_precision=PREC)
            a_ptrs += BLOCK_K
            w_ptrs += BLOCK_K
        _store(c_ptr, acc, pid_m, pid_n, M, N, BLOCK_M, BLOCK_N)
    return kernel


def _tma_hook_nk(nargs):
    nargs["a_desc"].block_shape = [nargs["BLOCK_M"], nargs["BLOCK_K"]]
    nargs["b_desc"].block_shape = [nargs["BLOCK_N"], nargs["BLOCK_K"]]


def _tma_hook_kn(nargs):
    nargs["a_desc"].block_shape = [nargs["BLOCK_M"], nargs["BLOCK_K"]]
    nargs["b_desc"].block_shape = [nargs["BLOCK_K"], nargs["BLOCK_N"]]


def gemm_tma_kernel(table, b_nk: bool):
    @triton.autotune(configs=configs(table, _tma_hook_nk if b_nk else _tma_hook_kn), key=["M", "N", "K"])
    @triton.jit
    def kernel(a_desc, b_desc, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
               BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, B_NK: tl.constexpr):
        pid_m, pid_n = _tile(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(0, K, BLOCK_K):  # TMA fills out-of-bounds rows and columns with zeros
            a = a_desc.load([pid_m * BLOCK_M, k])
            if B_NK:
                acc = tl.dot(a, b_desc.load([pid_n * BLOCK_N, k]).T, acc)
            else:
                acc = tl.dot(a, b_desc.load([k, pid_n * BLOCK_N]), acc)
        _store(c_ptr, acc, pid_m, pid_n, M, N, BLOCK_M, BLOCK_N)
    return kernel


def gemm_tma_persistent_kernel(table, b_nk: bool):
    @triton.autotune(configs=configs(table, _tma_hook_nk if b_nk else _tma_hook_kn), key=["M", "N", "K"])
    @triton.jit
    def kernel(a_desc, b_desc, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
               BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr, B_NK: tl.constexpr, NUM_SMS: tl.constexpr):
        tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)
        for tile in tl.range(tl.program_id(0), tiles, NUM_SMS, flatten=True):
            pid_m, pid_n = _tile(tile, M, N, BLOCK_M, BLOCK_N, GROUP_M)
            acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
            for k in range(0, K, BLOCK_K):
                a = a_desc.load([pid_m * BLOCK_M, k])
                if B_NK:
                    acc = tl.dot(a, b_desc.load([pid_n * BLOCK_N, k]).T, acc)
                else:
                    acc = tl.dot(a, b_desc.load([k, pid_n * BLOCK_N]), acc)
            _store(c_ptr, acc, pid_m, pid_n, M, N, BLOCK_M, BLOCK_N)
    return kernel


KERNELS: dict = {}


def kernel_for(form: str, dtype, linear: bool):
    """The autotuned kernel of a form, one per (form, operand dtype class, B layout)."""
    table = FP32_CONFIGS if dtype == torch.float32 else HALF_CONFIGS
    flags = (linear,) if form.startswith("tma") else ()  # TMA kernels are built for one B layout
    key = (form, id(table), flags)
    if key not in KERNELS:
        make = {"ptr": gemm_ptr_kernel, "ptr_nk": gemm_ptr_nk_kernel, "tma": gemm_tma_kernel,
                "tma_p": gemm_tma_persistent_kernel}[form]
        KERNELS[key] = make(table, *flags)
    return KERNELS[key]


def run_form(form: str, a, b, linear: bool, prec: str):
    """c = a @ W^T (linear, b = W [N, K]) or a @ b (b [K, N]) with the given kernel form."""
    M, K = a.shape
    N = b.shape[0] if linear else b.shape[1]
    c = torch.empty(M, N, device=a.device, dtype=a.dtype)
    kernel = kernel_for(form, a.dtype, linear)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)  # noqa: E731
    if form == "ptr":
        s_bk, s_bn = (b.stride(1), b.stride(0)) if linear else (b.stride(0), b.stride(1))
        kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), s_bk, s_bn, PREC=prec)
    elif form == "ptr_nk":
        kernel[grid](a, b, c, M, N, K, PREC=prec)
    else:
        a_desc = TensorDescriptor.from_tensor(a, [1, 1])  # the autotune hook sets the block shapes
        b_desc = TensorDescriptor.from_tensor(b, [1, 1])
        if form == "tma":
            kernel[grid](a_desc, b_desc, c, M, N, K, B_NK=linear)
        else:
            sms = torch.cuda.get_device_properties(a.device).multi_processor_count
            persistent = lambda meta: (min(sms, grid(meta)[0]),)  # noqa: E731
            kernel[persistent](a_desc, b_desc, c, M, N, K, B_NK=linear,
                                                           NUM_SMS=sms)
    return c


def rel_l2(got, exact) -> float:
    return float(torch.linalg.vector_norm(got.double() - exact) / torch.linalg.vector_norm(exact))


def probe(name, M, K, N, dtype, linear, forms, precs) -> list[dict]:
    torch.manual_seed(0)
    a = torch.randn(M, K, device="cuda", dtype=dtype)
    b = torch.randn((N, K) if linear else (K, N), device="cuda", dtype=dtype)
    ref = (lambda: torch.nn.functional.linear(a, b)) if linear else (lambda: a @ b)  # noqa: E731
    exact = (a.double() @ (b.double().T if linear else b.double())) if dtype == torch.float32 else None
    flop = 2.0 * M * N * K
    rows = []
    cublas_ms = triton.testing.do_bench(ref, return_mode="median")
    row = {"shape": name, "form": "cublas", "prec": "default", "ms": cublas_ms,
           "tflops": flop / cublas_ms / 1e9}
    if exact is not None:
        row["rel_l2"] = rel_l2(ref(), exact)
    rows.append(row)
    print(json.dumps(row), flush=True)
    for form in forms:
        if form == "ptr_nk" and not linear:
            continue
        for prec in precs:
            if form.startswith("tma") and (TensorDescriptor is None or prec != precs[0]):
                continue
            row = {"shape": name, "form": form, "prec": prec}
            try:
                got = run_form(form, a, b, linear, prec)
                check = ref().double() if exact is None else exact
                row["rel_l2"] = rel_l2(got, check)
                row["ms"] = triton.testing.do_bench(lambda f=form, p=prec: run_form(f, a, b, linear, p),
                                                    return_mode="median")
                row["tflops"] = flop / row["ms"] / 1e9
                row["vs_cublas"] = cublas_ms / row["ms"]
                row["best"] = str(getattr(kernel_for(form, dtype, linear), "best_config", ""))
            except Exception as err:  # a form that does not compile here is a finding, not a crash
                row["error"] = f"{type(err).__name__}: {str(err)[:300]}"
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


SHAPES = [  # name, M, K, N, dtype, linear: the built-in suite's GEMMs at their timed sizes
    ("linear_bias_bf16", 16384, 4096, 11008, torch.bfloat16, True),
    ("linear_gelu_bf16", 8192, 4096, 16384, torch.bfloat16, True),
    ("linear_swish_fp16", 8192, 8192, 8192, torch.float16, True),
    ("matmul_fp16", 8192, 8192, 8192, torch.float16, False),
    ("matmul_fp32", 4096, 4096, 4096, torch.float32, False),
    ("linear_fp32 (linear_relu_scale_residual)", 4096, 4096, 4096, torch.float32, True),
    ("matmul_tall_skinny", 524288, 128, 512, torch.float32, False),
]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=None)
    parser.add_argument("--only", default=None, help="comma-separated shape names")
    args = parser.parse_args(argv)
    print(json.dumps({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                      "triton": triton.__version__}), flush=True)
    rows = []
    for name, M, K, N, dtype, linear in SHAPES:
        if args.only and name.split(" ")[0] not in args.only.split(","):
            continue
        half = dtype != torch.float32
        forms = ["ptr", "ptr_nk", "tma", "tma_p"] if half else ["ptr", "ptr_nk"]
        precs = ["tf32"] if half else ["ieee", "tf32x3", "tf32"]  # ignored by 16-bit dots
        try:
            rows += probe(name, M, K, N, dtype, linear, forms, precs)
        except Exception as err:
            print(json.dumps({"shape": name, "error": f"{type(err).__name__}: {err}"}), flush=True)
        torch.cuda.empty_cache()  # the shape's operands are gone with probe()'s frame
        if args.out:
            Path(args.out).mkdir(parents=True, exist_ok=True)
            (Path(args.out) / "probe_gemm.json").write_text(json.dumps(rows, indent=1))
    best = {}
    for r in rows:
        if "ms" in r and r["form"] != "cublas" and (r.get("rel_l2", 0) < 1e-2):
            cur = best.get(r["shape"])
            if cur is None or r["ms"] < cur["ms"]:
                best[r["shape"]] = r
    for shape, r in best.items():
        print(f"best {shape}: {r['form']} {r['prec']} {r['ms']:.3f} ms {r['tflops']:.0f} TFLOP/s "
              f"x{r['vs_cublas']:.2f} cuBLAS  {r['best']}", file=sys.stdout)


if __name__ == "__main__":
    main()
