"""What the steps ask of a kernel: its estimated time against an H100-class roofline (the dominant
kernel is the slowest), its programs, whether it runs tl.dot and with which precision it may, and the
shared memory its pipelined loop needs."""

from __future__ import annotations

import math

from coders.template import conv_transpose_lower, fuse, recurrent
from coders.template.conv_lower import conv_flops, conv_gemm
from coders.template.emit import conv_fma
from coders.template.emit import scan as scan_emit
from coders.template.emit.reduce import Layout
from coders.template.ir import SPACE_VALUES, Kernel, ProgramIR
from coders.template.scans import WALK_KINDS
from mtmc.protocols import CoderError
from mtmc.tasks import Task

PEAK_BYTES = 3.0e12
PEAK_FLOPS = {"float32": 5.0e13, "float16": 5.0e14, "bfloat16": 5.0e14}
ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "float64": 8, "int64": 8, "int32": 4, "bool": 1}

SMS = 132  # H100 / H200
DOT_KINDS = (*fuse.GEMM_KINDS, "attention")  # kernels with a pipelined tl.dot loop (but see uses_dot)


def numel(shape: list[int] | None) -> int:
    return math.prod(shape) if shape else 1


def _bytes(ir: ProgramIR, value: str) -> int:
    info = ir.values.get(value, {})
    if info.get("shape") is None:
        return 0
    return numel(info["shape"]) * ITEMSIZE.get(info.get("dtype") or "float32", 4)


def matmul_mnk(ir: ProgramIR, kernel: Kernel) -> tuple[int, int, int, int]:
    """(batch, M, N, K) at the traced sizes."""
    a = ir.shape(kernel.space["a"])
    b = ir.shape(kernel.space["b"])
    form = kernel.space["form"]
    if form == "bmm":
        return numel(a[:-2]), a[-2], b[-1], a[-1]
    n = b[0] if form == "linear" else b[1]
    return 1, numel(a[:-1]), n, a[-1]


def cost(ir: ProgramIR, kernel: Kernel) -> float:
    reads = {o.value for o in kernel.operands if not o.scalar}
    reads |= {kernel.space[k] for k in SPACE_VALUES if isinstance(kernel.space.get(k), str)}
    moved = sum(_bytes(ir, v) for v in reads) + sum(_bytes(ir, o.value) for o in kernel.outputs)
    flops = 0
    dtype = "float32"
    if kernel.kind == "matmul":
        batch, m, n, k = matmul_mnk(ir, kernel)
        flops = 2 * batch * m * n * k
        dtype = ir.values[kernel.space["a"]]["dtype"]
    elif kernel.kind == "conv":
        flops = conv_flops(ir, kernel)
    elif kernel.kind == "conv_transpose":
        flops = conv_transpose_lower.flops(ir, kernel)
        dtype = kernel.space["dtype"]
    elif kernel.kind == "attention" and kernel.space["v"] is None:
        q, sk = ir.shape(kernel.space["q"]), kernel.space["traced"][-1]
        flops = 2 * 2 * numel(q) * sk  # the scores are computed twice
        dtype = ir.values[kernel.space["q"]]["dtype"]
    elif kernel.kind == "attention":
        q, v = ir.shape(kernel.space["q"]), ir.shape(kernel.space["v"])
        flops = 2 * numel(q) * v[-2] + 2 * numel(q[:-1]) * v[-2] * v[-1]
        dtype = ir.values[kernel.space["q"]]["dtype"]
    elif kernel.kind == "recurrent":
        flops, moved = recurrent.flops(kernel), moved + recurrent.moved(ir, kernel)
        dtype = kernel.space["dtype"]
    # a kernel with fewer programs than SMs leaves the rest of the GPU idle
    occupancy = min(1.0, programs(ir, kernel) / SMS)
    return max(moved / PEAK_BYTES, flops / PEAK_FLOPS.get(dtype, 5.0e13)) / occupancy


def programs(ir: ProgramIR, kernel: Kernel) -> int:
    """How many programs the kernel launches at the traced sizes (about)."""
    shape, cfg = kernel.space["traced"], kernel.config
    split = cfg.get("split_k", 1)
    if kernel.kind == "reduce":
        lay = Layout(kernel)
        if lay.groups:
            return max(1, shape[0] * 8)
        rows = numel(shape[:lay.d0])
        if lay.column:
            rows *= -(-numel(shape[lay.d1:]) // cfg["BLOCK_N"])
        return rows * split
    if kernel.kind == "matmul":
        batch, m, n, _ = matmul_mnk(ir, kernel)
        return batch * -(-m // cfg["BLOCK_M"]) * -(-n // cfg["BLOCK_N"]) * split
    if kernel.kind == "attention":
        return numel(shape[:-2]) * -(-shape[-2] // cfg["BLOCK_M"])
    if kernel.kind == "conv":
        groups, m, n, _ = conv_gemm(ir, kernel)
        if kernel.space["form"] == "direct":  # one tile spans the channels of every group
            return -(-m // cfg["BLOCK_M"]) * -(-(n * groups) // cfg["BLOCK_N"])
        return groups * -(-m // cfg["BLOCK_M"]) * -(-n // cfg["BLOCK_N"])
    if kernel.kind == "conv_transpose":
        return conv_transpose_lower.programs(ir, kernel)
    if kernel.kind == "recurrent":
        return recurrent.programs(kernel)
    if kernel.kind in WALK_KINDS:
        d = kernel.space["dim"]
        if scan_emit.is_row(kernel):
            return numel(shape[:d])
        return numel(shape[:d]) * -(-numel(shape[d + 1:]) // cfg["BLOCK_N"])
    return -(-numel(shape) // cfg.get("BLOCK", 1024))


def dominant(ir: ProgramIR) -> Kernel:
    kernels = ir.kernels()
    if not kernels:
        raise CoderError("the program has no Triton kernel to tune")
    return max(kernels, key=lambda k: cost(ir, k))


def uses_dot(kernel: Kernel) -> bool:
    """The kernel's inner loop is a tl.dot: a depthwise conv's direct form and the FMA loop of a conv
    with few input channels (emit/conv_fma.py) do FMAs."""
    if kernel.kind == "conv" and kernel.space["form"] == "direct":
        return False
    return kernel.kind in DOT_KINDS and not conv_fma.uses_fma(kernel)


def is_column(kernel: Kernel) -> bool:
    return kernel.kind == "reduce" and Layout(kernel).column


def _fp32_operands(ir: ProgramIR, kernel: Kernel) -> bool:
    if kernel.kind == "recurrent":  # its dots multiply the state by W_hh, both in the layer's dtype
        return kernel.space["dtype"] == "float32"
    keys = {"matmul": ("a", "b"), "conv": ("input", "weight"), "conv_transpose": ("input", "weight")}
    keys = keys.get(kernel.kind, ("q", "k", "v"))
    return all(ir.values[kernel.space[k]]["dtype"] == "float32" for k in keys if kernel.space[k] is not None)


def dot_kernels(ir: ProgramIR) -> list[Kernel]:
    """The kernels whose dots read fp32 operands: what a `precision` step changes (a recurrent
    layer's dots too, though its time loop is not a tile loop the other steps tune)."""
    return [k for k in ir.kernels() if (uses_dot(k) or k.kind == "recurrent") and _fp32_operands(ir, k)]


TF32_BY_DEFAULT = ("conv", "conv_transpose", "recurrent")  # eager runs these on TF32 (cuDNN's default)


def tf32_allowed(task: Task, kernel: Kernel) -> bool:
    """fp32 precision follows eager PyTorch on the same GPU: cuDNN runs fp32 convolutions and RNNs on
    TF32 tensor cores by default (torch.backends.cudnn.allow_tf32 is True), so those kernels may
    too; matmuls run strict fp32 (torch.backends.cuda.matmul.allow_tf32 is False), so a matmul or
    attention kernel uses TF32 only where the task allows it (MTMC["precision"])."""
    return kernel.kind in TF32_BY_DEFAULT or "tf32" in task.precisions


def smem_bytes(ir: ProgramIR, kernel: Kernel) -> int:
    """Shared memory the pipelined loop of a matmul or attention kernel needs, about: `num_stages`
    buffers of each tile its loop loads (Triton's own count adds a little for layout conversions).
    On an H100, attention_sdpa_bf16 (head_dim 128) with 128x128 tiles and num_stages 4 failed to
    launch (OutOfResources: 4 x 128 x (128 + 128) x 2 B of K and V tiles, plus Q's, is 288 KiB).
    Autotuned kernels are not counted: Triton's autotuner skips configurations that do not fit."""
    cfg = kernel.config
    if cfg.get("autotune") or not uses_dot(kernel):
        return 0
    stages = max(1, int(cfg.get("num_stages", 1)))
    if kernel.kind in fuse.GEMM_KINDS:
        a = kernel.space["a"] if kernel.kind == "matmul" else kernel.space["input"]
        itemsize = ITEMSIZE.get(ir.values[a]["dtype"], 4)
        bm, bn, bk = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"]
        return stages * (bm * bk + bk * bn) * itemsize
    itemsize = ITEMSIZE.get(ir.values[kernel.space["q"]]["dtype"], 4)
    d_qk = ir.shape(kernel.space["q"])[-1]
    d_v = ir.shape(kernel.space["v"])[-1] if kernel.space["v"] is not None else 0
    return (stages * cfg["BLOCK_N"] * (d_qk + d_v) + cfg["BLOCK_M"] * d_qk) * itemsize
