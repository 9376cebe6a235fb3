"""What a matmul kernel's space and config decide: batching, the epilogue's axes and triangles, the
dot precision, TMA, B's layout, tile grouping, the split-K reduce kernel's name; and the autotuner's
space."""

from __future__ import annotations

import math

from coders.template.emit.common import Axis, FusionError, ptr, var
from coders.template.emit.launch import autotune_configs
from coders.template.ir import Kernel


def is_batched(kernel: Kernel) -> bool:
    return kernel.space["form"] == "bmm"


def epilogue_axes(kernel: Kernel) -> list[Axis]:
    rank = len(kernel.space["traced"])
    if is_batched(kernel):
        return [Axis(list(range(rank - 2)), "pid_b", "n_batch", None),
                Axis([rank - 2], "rm", "M", "m_mask"), Axis([rank - 1], "rn", "N", "n_mask")]
    return [Axis(list(range(rank - 1)), "rm", "M", "m_mask"), Axis([rank - 1], "rn", "N", "n_mask")]


def triangle_outputs(kernel: Kernel) -> tuple[str, int] | None:
    """(kind, diagonal) when every output is triu / tril of the same diagonal: zero off the triangle
    whatever the product there (torch.triu(a @ b), KernelBench 14/15)."""
    ops = {op.out: op for op in kernel.body}
    found = set()
    for out in kernel.outputs:
        op = ops.get(out.src)
        if op is None or op.op not in ("triu", "tril"):
            return None
        found.add((op.op, int(op.attrs["diagonal"])))
    return found.pop() if len(found) == 1 else None


def check_triangles(kernel: Kernel) -> None:
    """triu / tril in the epilogue read the tile's row and column: rm is a row of the matrix only
    when no leading dims fold into M (a 2-D matmul, or a bmm whose batch is its own grid axis)."""
    if not is_batched(kernel) and len(kernel.space["traced"]) != 2:
        raise FusionError("triu / tril after a matmul whose leading dims fold into its rows")


def dot_precision(kernel: Kernel) -> str:
    return kernel.config.get("precision", "ieee")


def uses_tma(kernel: Kernel) -> bool:
    """16-bit 2-D GEMMs load their tiles with TMA descriptors when the GPU and the operands allow
    it (pointer loads otherwise), from the port on. On the H200, autotuned, TMA loads ran the suite's
    linear/matmul shapes at 0.82-0.98x cuBLAS against 0.70-0.90x for pointer loads, and 0.82-1.00x
    persistent (BENCHMARKS.md). Tied to `persistent` alone, the planner never reached it: the
    pointer-load kernel's autotune was a coin toss against the port, and was rejected."""
    return kernel.config.get("split_k", 1) == 1 and not is_batched(kernel) \
        and kernel.space.get("dtype") in ("float16", "bfloat16")


def b_rows_are_n(kernel: Kernel) -> bool:
    """A linear's weight is [N, K]: its TMA tiles are [BLOCK_N, BLOCK_K], transposed in the dot."""
    return kernel.space["form"] == "linear"


def fp32_layout_copy(kernel: Kernel) -> str | None:
    """fp32 dots want B in a particular memory order (measured on the H200, 4096^3): FMA (ieee) dots
    ran 3.05 ms with B N-major and 6.41 ms K-major; tf32x3 tensor-core dots 1.74 ms K-major and
    2.51 ms N-major. One copy of B into the faster order costs ~0.03 ms there. Returns the order B
    is copied into ("n" or "k"), or None when its order already fits or the dot is 16-bit."""
    if kernel.space.get("dtype") != "float32" or kernel.config.get("split_k", 1) > 1:
        return None
    k_major = b_rows_are_n(kernel)
    tensor_cores = dot_precision(kernel) in ("tf32", "tf32x3")
    if tensor_cores and not k_major:
        return "k"
    if not tensor_cores and k_major:
        return "n"
    return None


def k_padding(kernel: Kernel) -> tuple[int, int] | None:
    """(multiple, test) when the launcher zero-pads K (config `pad_k`, set by the port where K is
    misaligned at the traced sizes): at run time, if K % test != 0, its copies of A and B take K up
    to a multiple of `multiple` (BLOCK_K, every autotuned BLOCK_K) and the kernel gets that as K. Both
    operands' rows are then 16-byte aligned, so loads vectorise and tensor-core copies (cp.async) move
    16 bytes, and EVEN_K holds (no masked K loop); the zeros add nothing to the dot. On an H100,
    KernelBench level-1 8_ (K = 2949, N = 5921, fp32 at tf32x3) ran 0.28x cuBLAS unpadded where the
    aligned level-1 matmuls ran 1.2-1.6x. An mm's or bmm's B is copied K-major anyway, so padding it
    is free and A's copy is one more pass over A: any K off a multiple of BLOCK_K pads. A Linear's
    weight is read as stored: padding it is a copy per call, paid only where its rows are misaligned
    (K % 4). fp32 tensor-core dots only: 16-bit, ieee and split-K programs are unchanged."""
    if not kernel.config.get("pad_k") or kernel.space.get("dtype") != "float32" or \
            kernel.config.get("split_k", 1) > 1 or dot_precision(kernel) not in ("tf32", "tf32x3"):
        return None
    menu = _tuning_menu(kernel) if kernel.config.get("autotune") else [kernel.config]
    multiple = math.lcm(*(m["BLOCK_K"] for m in menu))
    return multiple, 4 if b_rows_are_n(kernel) else multiple


def operand_params(kernel: Kernel) -> list[str]:
    return [var(o.value) if o.scalar else ptr(o.value) for o in kernel.operands]


def is_grouped(kernel: Kernel) -> bool:
    """Autotuned kernels always walk tiles in groups: on the H200 the persistent TMA GEMMs ran
    0.88-0.93x cuBLAS autotuned in row order and 0.94-1.02x with GROUP_M=8 (BENCHMARKS.md)."""
    return kernel.config.get("GROUP_M", 1) > 1 or bool(kernel.config.get("autotune"))


def group_size(kernel: Kernel) -> int:
    return kernel.config["GROUP_M"] if kernel.config.get("GROUP_M", 1) > 1 else 8


def b_block_keys(kernel: Kernel) -> tuple[str, str]:
    return ("BLOCK_N", "BLOCK_K") if b_rows_are_n(kernel) else ("BLOCK_K", "BLOCK_N")


def split_reduce_name(name: str) -> str:
    return name.removesuffix("_kernel") + "_splitk_reduce_kernel"


TUNE_KEYS = ["BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages"]


def tuning_space(kernel: Kernel) -> list[dict]:
    return autotune_configs(_tuning_menu(kernel), TUNE_KEYS)


def _tuning_menu(kernel: Kernel) -> list[dict]:
    cfg = kernel.config
    current = {k: cfg[k] for k in TUNE_KEYS}
    group = {"GROUP_M": group_size(kernel)} if is_grouped(kernel) else {}
    if kernel.space.get("dtype") in ("float16", "bfloat16"):
        candidates = ((128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (128, 128, 64, 8, 4), (128, 128, 64, 4, 4),
                      (128, 64, 64, 4, 4), (64, 128, 64, 4, 4), (64, 64, 64, 4, 4))
    else:
        candidates = ((128, 128, 32, 8, 3), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4), (64, 64, 32, 4, 4),
                      (128, 128, 16, 8, 4), (32, 64, 32, 4, 3))
    menu = [current] + [dict(zip(TUNE_KEYS, c, strict=True)) for c in candidates]
    return [{**m, **group} for m in menu]
