"""The conv kernel's autotune candidates (emit/conv.py emits the kernel and re-exports these)."""

from __future__ import annotations

from coders.template.emit import channel_reduce, conv_fma
from coders.template.emit.launch import autotune_configs
from coders.template.ir import Kernel


def tuning_space(kernel: Kernel) -> list[dict]:
    cfg = kernel.config
    if conv_fma.uses_fma(kernel):
        keys, candidates = conv_fma.tuning_candidates(kernel)
    elif kernel.space["form"] == "gemm":
        keys = ["BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages"]
        if kernel.space.get("dtype") in ("float16", "bfloat16"):
            candidates = ((128, 128, 64, 8, 3), (128, 64, 64, 4, 3), (64, 128, 64, 4, 3), (64, 64, 64, 4, 3),
                          (128, 64, 32, 4, 4), (256, 64, 32, 8, 4))
        else:  # 256 x 64 tiles led the probe's fp32 tiles on an H100 (conv_lower.TAPS_CONFIG)
            candidates = ((256, 64, 32, 8, 4), (256, 64, 16, 8, 4), (128, 64, 32, 4, 3), (64, 64, 32, 4, 2),
                          (64, 64, 16, 4, 4), (128, 128, 32, 8, 3))
    else:
        keys = ["BLOCK_M", "BLOCK_N", "num_warps", "num_stages"]
        candidates = ((64, 32, 4, 2), (128, 32, 4, 2), (64, 64, 4, 2), (128, 64, 8, 2), (32, 32, 2, 2))
    if channel_reduce.reduces_channels(kernel):
        keys, candidates = channel_reduce.tuning_menu(kernel, keys, list(candidates))
    current = {k: cfg[k] for k in keys}
    menu = [current] + [dict(zip(keys, c, strict=True)) for c in candidates]
    return autotune_configs(menu, keys)
