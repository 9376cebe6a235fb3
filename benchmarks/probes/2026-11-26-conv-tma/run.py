"""Probe: a stride-1 convolution as a "shifted-row" implicit GEMM loaded by TMA descriptors.

    python benchmarks/probes/2026-11-26-conv-tma/run.py --out $OUT/tma.json [--cases 55 62 ...]
    python benchmarks/probes/2026-11-26-conv-tma/run.py --cpu-dry-run      # logic, interpreter

The input is copied once per call into a zero-padded channels-last buffer Xp [N, (Dp,) Hp, Wp, C],
seen as a matrix [N*Dp*Hp*Wp, C]. For a stride-1 conv, output pixel q (indexed over the padded
grid) reads, for kernel tap t, input row q + shift(t) with shift(t) = (kd*dd*Hp + kh*dh)*Wp + kw*dw:
a tap's A tile is BLOCK_M consecutive rows, one TMA box, no address arithmetic, the padding and
every edge zero-filled by the copy or by TMA. Rows of the padded grid that are not outputs
(oh >= out_h or ow >= out_w) are computed and dropped at the store. The weight is [taps*C, C_out];
a K block past the group's C channels meets zero columns of A (TMA fills past C), so it needs no
mask. Timed against eager (cuDNN, TF32 on: PyTorch's default), torch.compile, and the template
coder's current kernel (its port) where --template is given.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

if "--cpu-dry-run" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402


@triton.jit
def conv_shift_kernel(
    x_desc,
    w_desc,
    out_ptr,
    bias_ptr,
    ROWS,
    C_out,
    C_in,
    c_blocks,
    taps,
    Dp,
    Hp,
    Wp,
    out_d,
    out_h,
    out_w,
    ks_h,
    ks_w,
    dil_d,
    dil_h,
    dil_w,
    x_ptr,
    HAS_BIAS: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    B_NK: tl.constexpr,
    A_TMA: tl.constexpr,
):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(ROWS, BLOCK_M)
    num_pid_n = tl.cdiv(C_out, BLOCK_N)
    # grouped order: GROUP_M row tiles share their B tiles (and their A rows overlap by the shifts)
    width = GROUP_M * num_pid_n
    group = pid // width
    first_m = group * GROUP_M
    size_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % width) % size_m
    pid_n = (pid % width) // size_m
    q0 = pid_m * BLOCK_M
    n0 = pid_n * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(0, taps * c_blocks):
        tap = step // c_blocks
        c0 = (step % c_blocks) * BLOCK_K
        kw = tap % ks_w
        rest = tap // ks_w
        kh = rest % ks_h
        kd = rest // ks_h
        shift = (kd * dil_d * Hp + kh * dil_h) * Wp + kw * dil_w
        if A_TMA:
            a = x_desc.load([q0 + shift, c0])
        else:
            rows_a = q0 + shift + tl.arange(0, BLOCK_M)
            cols_a = c0 + tl.arange(0, BLOCK_K)
            a = tl.load(
                x_ptr + rows_a.to(tl.int64)[:, None] * C_in + cols_a[None, :],
                mask=(rows_a < ROWS)[:, None] & (cols_a < C_in)[None, :],
                other=0.0,
            )
        if B_NK:  # weight [C_out, taps*C]: K-major tiles, the layout TF32 wgmma reads from shared memory
            b = w_desc.load([n0, tap * C_in + c0]).T
        else:
            b = w_desc.load([tap * C_in + c0, n0])
        acc = tl.dot(a, b, acc, input_precision="tf32")
    q = q0 + tl.arange(0, BLOCK_M)
    ow = q % Wp
    rest_q = q // Wp
    oh = rest_q % Hp
    rest_q = rest_q // Hp
    od = rest_q % Dp
    img = (rest_q // Dp).to(tl.int64)
    valid = (q < ROWS) & (ow < out_w) & (oh < out_h) & (od < out_d)
    ch = n0 + tl.arange(0, BLOCK_N)
    if HAS_BIAS:
        acc += tl.load(bias_ptr + ch, mask=ch < C_out, other=0.0)[None, :]
    plane = out_d * out_h * out_w
    pix = (od * out_h + oh) * out_w + ow
    offs = (img[:, None] * C_out + ch[None, :]) * plane + pix[:, None]
    tl.store(out_ptr + offs, acc, mask=valid[:, None] & (ch < C_out)[None, :])


def conv_shift(x, weight, bias, padding, dilation, cfg):
    """Stride-1 conv (1d/2d/3d, groups=1) through conv_shift_kernel; C_in and C_out multiples of 4."""
    nd = x.dim() - 2
    n, c_in = x.shape[:2]
    c_out = weight.shape[0]
    spatial = list(x.shape[2:])
    ks = list(weight.shape[2:])
    padded = [s + 2 * p for s, p in zip(spatial, padding, strict=True)]
    outs = [pp - d * (k - 1) for pp, d, k in zip(padded, dilation, ks, strict=True)]
    xp = x.new_empty([n, *padded, c_in])
    if any(padding):
        xp.zero_()
    inner = tuple(slice(p, p + s) for p, s in zip(padding, spatial, strict=True))
    xp[(slice(None), *inner)] = x.permute(0, *range(2, nd + 2), 1)
    x2 = xp.view(-1, c_in)
    b_nk = cfg.get("B_NK", False)
    if b_nk:
        w2 = weight.permute(0, *range(2, nd + 2), 1).reshape(c_out, -1)
    else:
        w2 = weight.permute(*range(2, nd + 2), 1, 0).reshape(-1, c_out)
    if cfg.get("ROUND"):  # operands rounded to TF32 (nearest) once, so the tensor cores' truncation is exact
        x2, w2 = round_tf32(x2), round_tf32(w2)
    bm, bn, bk = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"]
    x_desc = TensorDescriptor.from_tensor(x2, [bm, bk])
    w_desc = TensorDescriptor.from_tensor(w2, [bn, bk] if b_nk else [bk, bn])
    out = x.new_empty([n, c_out, *outs])
    pad3 = [1] * (3 - nd) + padded
    out3 = [1] * (3 - nd) + outs
    ks3 = [1] * (3 - nd) + ks
    dil3 = [1] * (3 - nd) + list(dilation)
    rows = x2.shape[0]
    taps = 1
    for k in ks:
        taps *= k
    grid = (triton.cdiv(rows, bm) * triton.cdiv(c_out, bn),)
    conv_shift_kernel[grid](
        x_desc,
        w_desc,
        out,
        bias if bias is not None else out,
        rows,
        c_out,
        c_in,
        triton.cdiv(c_in, bk),
        taps,
        *pad3,
        *out3,
        ks3[1],
        ks3[2],
        *dil3,
        x2,
        HAS_BIAS=bias is not None,
        B_NK=b_nk,
        A_TMA=cfg.get("A_TMA", True),
        BLOCK_M=bm,
        BLOCK_N=bn,
        BLOCK_K=bk,
        GROUP_M=cfg.get("GROUP_M", 8),
        num_warps=cfg["num_warps"],
        num_stages=cfg["num_stages"],
    )
    return out


def round_tf32(t):
    """fp32 values rounded to TF32's 10-bit mantissa, to nearest (ties away), as cuDNN rounds."""
    bits = t.view(torch.int32)
    return torch.where(torch.isfinite(t), ((bits + 0x1000) & -0x2000).view(torch.float32), t)


# KernelBench shapes (level 1 and level-2 convs; stride 1, groups 1): name, N, C_in, C_out, spatial, kernel,
# padding, dilation
CASES = {
    "55": (8, 64, 128, (512, 1024), (3, 3), (0, 0), (1, 1)),
    "56": (8, 64, 128, (512, 256), (5, 7), (0, 0), (1, 1)),
    "62": (8, 32, 64, (512, 512), (5, 9), (0, 0), (1, 1)),
    "63": (16, 16, 128, (1024, 1024), (3, 3), (0, 0), (1, 1)),
    "67": (32, 64, 128, (131072,), (3,), (0,), (1,)),
    "80": None,  # filled from the task file when present
    "l2_1": (128, 64, 128, (128, 128), (3, 3), (0, 0), (1, 1)),
    "l2_c8": (128, 8, 64, (128, 128), (3, 3), (0, 0), (1, 1)),
    "l2_3d": (128, 8, 16, (16, 64, 64), (3, 3, 3), (0, 0, 0), (1, 1, 1)),
    "pad1": (32, 64, 64, (128, 128), (3, 3), (1, 1), (1, 1)),
    "dil": (8, 32, 64, (512, 512), (3, 5), (2, 4), (2, 3)),
}
CASES.pop("80")
DRY = {
    "tiny2d": (2, 16, 20, (9, 13), (3, 3), (1, 0), (1, 2)),
    "tiny1d": (3, 20, 8, (17,), (3,), (2,), (2,)),
    "tiny3d": (2, 16, 12, (5, 6, 7), (2, 3, 2), (1, 0, 1), (1, 1, 2)),
}
BASE = dict(BLOCK_M=128, BLOCK_N=64, BLOCK_K=32, num_warps=4, num_stages=4)
CONFIGS = {
    "kn-256x64": dict(BLOCK_M=256, BLOCK_N=64, BLOCK_K=32, num_warps=8, num_stages=4),
    "nk-256x64": dict(BLOCK_M=256, BLOCK_N=64, BLOCK_K=32, num_warps=8, num_stages=4, B_NK=True),
    "nk-128x64": dict(BASE, B_NK=True),
    "nk-128x128w8s3": dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, num_warps=8, num_stages=3, B_NK=True),
    "nk-128x128w4s4": dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, num_warps=4, num_stages=4, B_NK=True),
    "nk-256x128w8s3": dict(BLOCK_M=256, BLOCK_N=128, BLOCK_K=32, num_warps=8, num_stages=3, B_NK=True),
    "nk-128x256w8s3": dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=32, num_warps=8, num_stages=3, B_NK=True),
    "nk-128x128x64w8s3": dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, num_warps=8, num_stages=3, B_NK=True),
    "nk-128x128w8s3-ptrA": dict(
        BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, num_warps=8, num_stages=3, B_NK=True, A_TMA=False
    ),
    "nk-256x64-ptrA": dict(
        BLOCK_M=256, BLOCK_N=64, BLOCK_K=32, num_warps=8, num_stages=4, B_NK=True, A_TMA=False
    ),
    "nk-128x128w8s3-round": dict(
        BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, num_warps=8, num_stages=3, B_NK=True, ROUND=True
    ),
}
DRY_CONFIGS = {
    "16x16x16": dict(BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, num_warps=4, num_stages=1, GROUP_M=2),
    "nk-16": dict(BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, num_warps=4, num_stages=1, B_NK=True),
    "nk-16-ptrA-round": dict(
        BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, num_warps=4, num_stages=1, B_NK=True, A_TMA=False, ROUND=True
    ),
}


def normalized(out, ref):
    return ((out.double() - ref.double()).norm() / ref.double().norm()).item()


def conv_fn(nd):
    return {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[nd]


def bench(fn, dry):
    if dry:
        t0 = time.perf_counter()
        fn()
        return (time.perf_counter() - t0) * 1e3
    return triton.testing.do_bench(fn, warmup=10, rep=60)


def run_case(name, spec, configs, dry, device, compile_too):
    n, c_in, c_out, spatial, ks, pad, dil = spec
    nd = len(spatial)
    gen = torch.Generator(device="cpu").manual_seed(0)
    x = torch.randn(n, c_in, *spatial, generator=gen).to(device)
    w = (torch.randn(c_out, c_in, *ks, generator=gen) / (c_in * max(1, len(ks))) ** 0.5).to(device)
    b = torch.randn(c_out, generator=gen).to(device)
    conv = conv_fn(nd)
    torch.backends.cudnn.allow_tf32 = False
    ref = conv(x, w, b, padding=pad, dilation=dil)
    torch.backends.cudnn.allow_tf32 = True
    eager = conv(x, w, b, padding=pad, dilation=dil)
    row = {
        "eager_err": (eager - ref).abs().max().item(),
        "eager_nerr": normalized(eager, ref),
        "case": name,
        "shape": [n, c_in, c_out, list(spatial), list(ks), list(pad), list(dil)],
    }
    flops = 2 * ref.numel() * c_in
    for k in ks:
        flops *= k
    row["gflop"] = flops / 1e9
    row["eager_ms"] = bench(lambda: conv(x, w, b, padding=pad, dilation=dil), dry)
    if compile_too:
        try:
            cf = torch.compile(lambda x, w, b: conv(x, w, b, padding=pad, dilation=dil))
            cf(x, w, b)
            row["compile_ms"] = bench(lambda: cf(x, w, b), dry)
        except Exception as e:  # noqa: BLE001
            row["compile_error"] = repr(e)[:300]
        # eager on a channels-last input (what torch.compile's layout pass gives cuDNN), copy excluded
        try:
            mf = torch.channels_last if nd == 2 else (torch.channels_last_3d if nd == 3 else None)
            if mf is not None:
                xc, wc = x.contiguous(memory_format=mf), w.contiguous(memory_format=mf)
                row["eager_cl_ms"] = bench(lambda: conv(xc, wc, b, padding=pad, dilation=dil), dry)
        except Exception as e:  # noqa: BLE001
            row["eager_cl_error"] = repr(e)[:300]
    row["variants"] = {}
    for cname, cfg in configs.items():
        try:
            out = conv_shift(x, w, b, list(pad), list(dil), cfg)
            err = (out - ref).abs().max().item()
            ms = bench(lambda cfg=cfg: conv_shift(x, w, b, list(pad), list(dil), cfg), dry)
            row["variants"][cname] = {
                "ms": ms,
                "max_err": err,
                "nerr": normalized(out, ref),
                "tflops": flops / ms / 1e9,
                "vs_eager": row["eager_ms"] / ms,
            }
        except Exception as e:  # noqa: BLE001
            row["variants"][cname] = {"error": repr(e)[:500]}
        print(name, cname, row["variants"][cname], flush=True)
    return row


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default="/tmp/tma.json")
    p.add_argument("--cases", nargs="*")
    p.add_argument("--cpu-dry-run", action="store_true")
    p.add_argument("--no-compile", action="store_true")
    p.add_argument("--time-limit", type=float, default=400)
    args = p.parse_args()
    dry = args.cpu_dry_run
    cases = DRY if dry else CASES
    configs = DRY_CONFIGS if dry else CONFIGS
    device = "cpu" if dry else "cuda"
    names = args.cases or list(cases)
    meta = {
        "device": "cpu" if dry else torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "triton": triton.__version__,
    }
    rows = []
    start = time.time()
    for name in names:
        if time.time() - start > args.time_limit:
            rows.append({"case": name, "skipped": "time limit"})
            continue
        try:
            rows.append(run_case(name, cases[name], configs, dry, device, not (dry or args.no_compile)))
        except Exception as e:  # noqa: BLE001
            rows.append({"case": name, "error": repr(e)[:500]})
        print(json.dumps(rows[-1]), flush=True)
        with open(args.out, "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
