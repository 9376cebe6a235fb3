"""The port's kernel configs: simple, safe blocks per kernel kind; the planner tunes from here."""

from __future__ import annotations

import torch

POINTWISE_CONFIG = {"BLOCK": 1024, "num_warps": 4}
# columns per chunk; a row that fits is read once; auto_block: the emitter sizes both by the kernel's
# form (emit/reduce_launch.py row_blocks) until a `tile` step sets BLOCK
ROW_CONFIG = {"BLOCK": 8192, "split_k": 1, "auto_block": True}
# Both port splits (reductions below, split-K further down) aim at SPLIT_PER_SM programs on each of an
# H100's SPLIT_SMS streaming multiprocessors.
SPLIT_SMS = 132
SPLIT_PER_SM = 2
# A reduction that few programs would run starts split (the menu's `split_k`, emit/reduce_split.py):
# SPLIT programs share each row (or column block) until the launch has SPLIT_PROGRAMS programs, two a
# streaming multiprocessor of an H100 (132), each slice at least SPLIT_SLICE values (a 16K-value slice
# is two of the port's 8192-value chunks; a shorter one costs more in the second launch than it saves).
# KernelBench level 1 on an H100 at split 1 (one program per row): 37_FrobeniusNorm_ 0.02x
# torch.compile, 94_MSELoss 0.02x, 96_HuberLoss 0.03x (a full reduction: one program); 40_LayerNorm
# 0.28x (16 rows; a normalization splits as emit/reduce_norm_split.py's two kernels).
SPLIT_PROGRAMS = SPLIT_PER_SM * SPLIT_SMS  # 264
SPLIT_SLICE = 16384
SPLIT_MIN = 4  # fewer slices: a second launch for at most a halved (and already short) reduction
# Rows of at most SHORT_ROW values share a program, SHORT_ROWS of them as one tile (config ROWS, the
# `rows` step). One row a program gives a 64-wide LayerNorm row one warp and leaves the GPU mostly idle:
# on an H100, KernelBench level-2 34_ went from 4.23 to 2.41 ms and 3_ from 5.05 to 3.23 with ROWS 4,
# 16 or 64 alike (benchmarks/probes/2026-11-27-reduce-rows). Rows wider than 64 were not probed.
SHORT_ROW = 256
SHORT_ROWS = 16
COLUMN_CONFIG = {"BLOCK_M": 32, "BLOCK_N": 64, "num_warps": 4, "split_k": 1}  # (reduced rows, columns)
# a full-size output (softmax over channels): up to 128 reduced rows of 32 columns in registers, read
# once (softmax_channels_fp16, H200: 1.19 ms at 2 warps, 1.20 at 4; 2.77 ms for 64-row chunks)
COLUMN_FULL_CONFIG = {"BLOCK_M": 128, "BLOCK_N": 32, "num_warps": 2, "split_k": 1}
# fp32 dots port at tf32x3: three TF32 tensor-core products, fp32-level accuracy (H200, 4096^3: error
# 2.4e-7 against an fp64 product, cuBLAS fp32's 1.1e-6; 1.08-1.56x cuBLAS, where FMA "ieee" dots ran
# 0.42-0.89x; BENCHMARKS.md). On an H100 the level-2 Linear tasks that kept the ieee port ran 0.73x
# torch.compile, the level-1 matmuls moved to tf32x3 1.2-1.6x. split_k: 1 here; lower/matmul.py
# splits few-tile, long-K products (port_split_k).
MATMUL_CONFIG = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_M": 1, "num_warps": 4,
                 "num_stages": 3, "split_k": 1, "precision": "tf32x3"}
# split-K from the port (lower/matmul.py port_split_k): an output of fewer tiles than SPLIT_SMS leaves
# SMs idle however long K is (KernelBench level-1 6_, 256 x 256 out, K = 524288: 16 tiles of 64x64 on
# an H100's 132 SMs, 0.08x torch.compile unsplit). Its slices: the power of two that gives at least
# SPLIT_PER_SM programs per SM, each slice keeping at least SPLIT_MIN_K of K, at most SPLIT_MAX
# (6_: 32 slices of 16384, 512 programs, an 8 MB fp32 workspace). 256 tiles were not split:
# matmul_large_k_fp16 (128x128 tiles, K = 131072) ran slower at `split_k 4` on the H200.
SPLIT_MIN_K = 4096
SPLIT_MAX = 64
# 16-bit operands run on the tensor cores: bigger tiles keep them busy (their dots ignore the
# precision, which stays the ieee it always was: the programs are unchanged)
MATMUL_CONFIG_16 = {**MATMUL_CONFIG, "BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 8,
                    "precision": "ieee"}
# fp32 attention at tf32x3 too, as its matmuls: a fused chain takes its kernels' precision
# (fuse/attention.py), and the fp32 scores kernel ran 1.91 ms at tf32x3 against 2.62 with FMA dots (H200)
ATTENTION_CONFIG = {"BLOCK_M": 64, "BLOCK_N": 64, "num_warps": 4, "num_stages": 2, "precision": "tf32x3"}
ATTENTION_CONFIG_16 = {**ATTENTION_CONFIG, "BLOCK_M": 128, "num_warps": 8, "precision": "ieee"}
# The flash kernel's tiles where the head dim is too wide for the blocks above (lower/attention.py):
# 32 x 32 tiles and no pipelining hold fp32 head dims up to 256 and 16-bit ones up to 512 in 128 KiB of
# the 227 KiB a program may have by its estimate (room for what that misses); wider ones lower as the
# unfused chain. Untimed.
ATTENTION_NARROW = {"BLOCK_M": 32, "BLOCK_N": 32, "num_stages": 1}
HALF = (torch.float16, torch.bfloat16)
